package redisbucket

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// honoursDeadlines reports whether client lets a context deadline reach its
// sockets (ContextTimeoutEnabled). Without it go-redis reads and writes
// with its own ReadTimeout and WriteTimeout (3 s by default) whatever the
// context says: a frozen server held calls 1.8 s past a 200 ms deadline.
func honoursDeadlines(client redis.UniversalClient) bool {
	switch c := client.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	case *redis.Ring:
		return c.Options().ContextTimeoutEnabled
	}
	return false
}

type reply struct {
	v   []int64
	err error
}

// run sends the script. On a client that does not honour deadlines it runs
// the call in a goroutine of its own and returns ctx's error when ctx ends
// first, so that no decision waits past the call timeout or the caller's
// deadline; the abandoned call ends with the client's own timeout, and its
// effect, if any, was a spend the caller never got (the safe side). The
// breaker sends only probes while Redis is slow, so few calls are
// abandoned at once.
func (e *engine) run(ctx context.Context, keys []string, args []any) ([]int64, error) {
	if !e.guard {
		return script.Run(ctx, e.client, keys, args...).Int64Slice()
	}
	ch := make(chan reply, 1)
	go func() {
		v, err := script.Run(ctx, e.client, keys, args...).Int64Slice()
		ch <- reply{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
