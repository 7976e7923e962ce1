package redisbucket

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
)

// start checks once, when a limiter is built, that Redis answers for its
// key: one read-only run of the script (peek, with no cost), bounded by
// the call timeout. It goes where the decisions will go (the key's node on
// a cluster) and needs what they need (the script allowed by the ACL, the
// key readable), so a success means the first decision is not the one
// that finds out. A mistyped address would otherwise show only in Stats:
// FailLocal grants from its local share and nothing fails.
//
// An unreachable or failing-over Redis returns an error wrapping
// ErrUnavailable and the cause, unless WithStartWithoutRedis was given:
// then the breaker starts open on that cause, so that the first decisions
// go to the failure policy at once instead of each waiting out a call
// timeout. Any other error (an ACL refusal, scripting disabled) is a
// configuration that no waiting cures and is always returned. The check
// is not counted in Stats' Calls and CallErrors, which count decisions'
// calls.
func (e *engine) start() error {
	ctx, cancel := context.WithTimeout(context.Background(), e.o.callTimeout)
	defer cancel()
	args := e.argv(e.keys, generalHead+perLimit*len(e.limits))
	args = append(args, modePeek, e.timeArg(), len(e.limits), "", 1, "", "", "", "")
	args = e.appendLimits(args, make([]int64, len(e.limits)), nil)
	v, err := e.run(ctx, args)
	if err == nil {
		_, err = decodeReply(v, len(e.limits))
	}
	if err == nil {
		return nil
	}
	// ctx is the check's own: its deadline passing is Redis being slow.
	if !errors.Is(err, context.DeadlineExceeded) && !unavailable(context.Background(), err) {
		return fmt.Errorf("redisbucket: limiter %q: checking Redis at %s: %w", e.id, clientAddr(e.client), err)
	}
	if !e.o.startWithout {
		return fmt.Errorf("%w at %s: limiter %q: %w (checked within the call timeout, %v; WithStartWithoutRedis builds the limiter all the same)",
			ErrUnavailable, clientAddr(e.client), e.id, err, e.o.callTimeout)
	}
	if e.br.open(e.o.clock.Now(), e.unavailableErr(err)) {
		e.st.breakerOpens.Add(1)
	}
	return nil
}

// clientAddr names the server or servers client talks to, for errors.
func clientAddr(client redis.UniversalClient) string {
	switch c := client.(type) {
	case *redis.Client:
		if a := c.Options().Addr; a != "FailoverClient" {
			return a
		}
		return "the Sentinel master"
	case *redis.ClusterClient:
		return "cluster " + strings.Join(c.Options().Addrs, ",")
	case *redis.Ring:
		addrs := make([]string, 0, len(c.Options().Addrs))
		for _, a := range c.Options().Addrs {
			addrs = append(addrs, a)
		}
		slices.Sort(addrs)
		return "ring " + strings.Join(addrs, ",")
	}
	return fmt.Sprintf("%T", client)
}

// unavailableErr is the error that opens the breaker for err, the cause of
// every decision the failure policy takes until Redis answers again
// (Event.Err): it matches ErrUnavailable and names the server.
func (e *engine) unavailableErr(err error) error {
	return fmt.Errorf("%w at %s: %w", ErrUnavailable, clientAddr(e.client), err)
}
