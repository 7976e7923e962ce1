package redisbucket

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// honoursDeadlines reports whether client lets a context deadline reach its
// sockets (ContextTimeoutEnabled). Without it go-redis reads and writes
// with its own ReadTimeout and WriteTimeout (3 s by default) whatever the
// context says, and a frozen server holds a call that long.
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

// run sends the script with argv from e.argv. On a client that does not
// honour deadlines it runs the call in a goroutine of its own and returns
// ctx's error when ctx ends first, so that no decision waits past the call
// timeout or the caller's deadline; the abandoned call ends with the
// client's own timeout, and its effect, if any, was a spend the caller
// never got (the safe side). The breaker sends only probes while Redis is
// slow, so few calls are abandoned at once.
func (e *engine) run(ctx context.Context, argv []any) ([]int64, error) {
	if !e.guard {
		return e.send(ctx, argv)
	}
	ch := make(chan reply, 1)
	go func() {
		v, err := e.send(ctx, argv)
		ch <- reply{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// argv returns the command line of a script call, EVALSHA and keys,
// with room for n arguments to append.
func (e *engine) argv(keys []string, n int) []any {
	argv := make([]any, 3, 3+len(keys)+n)
	argv[0], argv[1], argv[2] = "evalsha", scriptHash, len(keys)
	for _, k := range keys {
		argv = append(argv, k)
	}
	return argv
}

// send is go-redis's Script.Run (EVALSHA, then EVAL when the server
// answers NOSCRIPT: after a restart, a failover or SCRIPT FLUSH) on one
// argument slice, with the reply read as integers as it arrives: no
// interface per value and no second slice (the script replies integers
// only). The first key is named, as Script.Run does, so that a cluster
// client routes by it.
func (e *engine) send(ctx context.Context, argv []any) ([]int64, error) {
	cmd := redis.NewIntSliceCmd(ctx, argv...)
	cmd.SetFirstKeyPos(3)
	_ = e.client.Process(ctx, cmd)
	if err := cmd.Err(); err != nil && (errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT")) {
		argv[0], argv[1] = "eval", scriptSrc
		cmd = redis.NewIntSliceCmd(ctx, argv...)
		cmd.SetFirstKeyPos(3)
		_ = e.client.Process(ctx, cmd)
	}
	return cmd.Result()
}
