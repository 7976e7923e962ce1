package grpcthrottle

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"google.golang.org/grpc"

	"github.com/throttlekit/throttle"
)

// meter takes the costs of a stream's messages from its Gate.
type meter struct {
	c      *config
	g      throttle.Gate
	method string
}

// before waits for the costs of msg, for a message about to be sent; the
// Permit (nil for a free message) is to be cancelled if the send fails.
func (m *meter) before(ctx context.Context, msg any) (throttle.Permit, error) {
	if m.c.msgCost == nil {
		return nil, nil
	}
	costs := m.c.msgCost(m.method, msg, false)
	if free(costs) {
		return nil, nil
	}
	p, err := m.g.Acquire(ctx, costs...)
	if err != nil {
		return nil, &GateError{Method: m.method, Err: err}
	}
	return p, nil
}

// after waits for the costs of msg, a message received: on an error the
// message is dropped and spends nothing.
func (m *meter) after(ctx context.Context, msg any) error {
	if m.c.msgCost == nil {
		return nil
	}
	costs := m.c.msgCost(m.method, msg, true)
	if free(costs) {
		return nil
	}
	if _, err := m.g.Acquire(ctx, costs...); err != nil {
		return &GateError{Method: m.method, Err: err}
	}
	return nil
}

func (cl *Client) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	c := cl.c
	g, err := c.pick(ctx, method, nil)
	if err != nil {
		return nil, fmt.Errorf("grpcthrottle: %s: choosing the gate: %w", method, err)
	}
	if g == nil {
		return streamer(ctx, desc, cc, method, opts...)
	}
	costs, err := c.costs(ctx, method, nil, g)
	if err != nil {
		return nil, fmt.Errorf("grpcthrottle: %s: the stream's cost: %w", method, err)
	}
	var p throttle.Permit
	if !free(costs) {
		if p, err = g.Acquire(ctx, costs...); err != nil {
			return nil, &GateError{Method: method, Err: err}
		}
	}
	cs, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		if p != nil {
			p.Cancel() // never opened
		}
		if r, refused := Refused(err); refused {
			c.heed(g, r)
		}
		return nil, err
	}
	if p == nil && c.msgCost == nil {
		return cs, nil
	}
	return &clientStream{ClientStream: cs, p: p, m: meter{c: c, g: g, method: method}}, nil
}

// clientStream meters a client's stream: its messages, and the end that
// says whether the server refused it.
type clientStream struct {
	grpc.ClientStream
	p    throttle.Permit // taken to open the stream, or nil
	m    meter
	once sync.Once
}

func (s *clientStream) SendMsg(msg any) error {
	p, err := s.m.before(s.Context(), msg)
	if err != nil {
		return err
	}
	if err := s.ClientStream.SendMsg(msg); err != nil {
		if p != nil {
			p.Cancel() // not sent
		}
		return err
	}
	return nil
}

func (s *clientStream) RecvMsg(msg any) error {
	if err := s.ClientStream.RecvMsg(msg); err != nil {
		s.end(err)
		return err
	}
	return s.m.after(s.Context(), msg)
}

func (s *clientStream) CloseSend() error { return s.ClientStream.CloseSend() }

// end reads the status that ended the stream: a refusal gives back the
// permit that opened it and is heeded as a unary call's is.
func (s *clientStream) end(err error) {
	if errors.Is(err, io.EOF) {
		return
	}
	s.once.Do(func() {
		r, refused := Refused(err)
		if !refused {
			return
		}
		if s.p != nil {
			s.p.Cancel()
		}
		s.m.c.heed(s.m.g, r)
	})
}

// serverStream meters a server's stream and carries its Permit.
type serverStream struct {
	grpc.ServerStream
	ctx context.Context
	m   meter
}

func (s *serverStream) Context() context.Context { return s.ctx }

func (s *serverStream) SendMsg(msg any) error {
	p, err := s.m.before(s.ctx, msg)
	if err != nil {
		return err
	}
	if err := s.ServerStream.SendMsg(msg); err != nil {
		if p != nil {
			p.Cancel()
		}
		return err
	}
	return nil
}

func (s *serverStream) RecvMsg(msg any) error {
	if err := s.ServerStream.RecvMsg(msg); err != nil {
		return err
	}
	return s.m.after(s.ctx, msg)
}
