package redisbucket

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// attempt makes one script call if the breaker allows it, and settles the
// breaker whatever happens: a reply or an error reply from the server
// closes it, unavailability opens it (fail is then true, with the cause),
// and a call cut short by the caller's context releases the probe. It
// returns err for the caller's context or a real error.
func (e *engine) attempt(ctx context.Context, now time.Time, mode, permit string, a, b []int64, share int64, ttl time.Duration, extra ...any) (res result, fail bool, cause, err error) {
	call, probe, cause := e.br.allow(now)
	if !call {
		if e.cl != nil {
			e.cl.watch(ctx, now, e.br)
		}
		return result{}, true, cause, nil
	}
	res, err = e.callAt(ctx, now, mode, permit, a, b, share, ttl, extra...)
	if err != nil && unavailable(ctx, err) && (staleConn(err) || e.moved(ctx)) {
		// A pooled connection to a server that restarted since (it fails
		// once per connection), or a cluster that moved the key's slot to
		// a live node: try once more, within the same call timeout.
		res, err = e.call(ctx, mode, permit, a, b, share, ttl, extra...)
	}
	switch {
	case err == nil:
		e.br.success()
		if e.cl != nil {
			e.cl.healthy()
		}
		return res, false, nil, nil
	case unavailable(ctx, err):
		slow := timedOut(err)
		err = e.unavailableErr(err)
		e.seen.fellBack(now)
		switch e.br.failure(now, err, probe, slow) {
		case failOpened:
			e.st.breakerOpens.Add(1)
			e.opened()
			e.seen.opened()
		case failEscalated:
			e.st.breakerOpens.Add(1)
			e.seen.opened()
		case failSuspect:
			e.opened()
		}
		return result{}, true, err, nil
	}
	if cerr := ctxErr(ctx); cerr != nil {
		e.br.abandon(probe)
		return result{}, false, nil, cerr
	}
	// The server answered, with an error: it is there.
	e.br.success()
	return result{}, false, nil, err
}

// moved reports, for a cluster client, whether the key's slot now belongs
// to another node than the one the failed call went to; see cluster.go.
func (e *engine) moved(ctx context.Context) bool {
	if e.cl == nil {
		return false
	}
	return e.cl.moved(ctx, e.o.clock.Now())
}

// transient are the error replies of a server that is loading, failing
// over, out of memory or busy: the failure policy decides, as for a timeout.
var transient = []string{"LOADING", "CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN", "READONLY", "BUSY", "OOM", "NOREPLICAS", "NOTBUSY"}

// unavailable reports whether err means Redis cannot decide now (timeout,
// connection error, transient error reply) rather than a caller's cancelled
// context or a real error (an ACL refusal, a script bug).
func unavailable(ctx context.Context, err error) bool {
	select {
	case <-ctx.Done():
		return false
	default:
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		msg := rerr.Error()
		for _, p := range transient {
			if strings.HasPrefix(msg, p) {
				return true
			}
		}
		return false
	}
	return true
}

// timedOut reports whether err is a call that ran out of time (the call
// timeout, a socket deadline) rather than one the server or the network
// refused: a slow server, which the breaker gives its patience.
func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// staleConn reports whether err is what a pooled connection to a server
// that has since restarted gives: the peer closed or reset it.
func staleConn(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed)
}
