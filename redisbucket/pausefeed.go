package redisbucket

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// pauseFeed hears, over Redis pub/sub, the pauses other processes store
// (PauseUntil publishes each one's end after storing it), so that a
// reserved sleeper need not ask Redis at its instant whether one was stored
// while it slept: that question was a second script call per reserved
// decision. A sleeper trusts the feed only if it was subscribed, with no
// break since, from before its reservation was sent to its wake: a message
// published while the subscription was down is lost, and a sleeper that
// cannot tell asks as before. The feed runs for a Limiter or Bucket built
// with reservations (the default), from its constructor to Close.
type pauseFeed struct {
	mu     sync.Mutex
	live   bool   // subscribed, no error since
	epoch  uint64 // counts the breaks
	opened bool   // openFeed ran
	closed bool   // closeFeed ran: the feed never opens again
	stop   context.CancelFunc
	done   chan struct{}
	ps     *redis.PubSub
}

// pauseChannel is the channel a Limiter's pauses are published on: its
// key's, so that ids never share one.
func (e *engine) pauseChannel() string { return e.key + ":pause" }

// feedRetry is how long the feed waits before it subscribes again after a
// break: Redis is down, and the breaker's probes find out when it is back.
const feedRetry = 100 * time.Millisecond

// startFeed opens the feed (openFeed) and waits up to the call timeout
// for the subscription to be confirmed, after which the feed is live for
// the first reservations too.
func (e *engine) startFeed() {
	first := e.openFeed()
	if first == nil {
		return
	}
	t := time.NewTimer(e.o.callTimeout)
	defer t.Stop()
	select {
	case <-first:
	case <-t.C:
	}
}

// openFeed subscribes in a goroutine of its own that keeps the
// subscription until closeFeed, once per engine and never after
// closeFeed; it returns a channel closed when the first subscription is
// confirmed or has failed, nil when the feed was opened or closed before.
// A reservation that sleeps opens it without waiting: that sleeper asks at
// its instant, the later ones hear the feed.
func (e *engine) openFeed() chan struct{} {
	f := &e.feed
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.opened || f.closed {
		return nil
	}
	f.opened = true
	ctx, stop := context.WithCancel(context.Background())
	f.stop, f.done = stop, make(chan struct{})
	f.ps = e.client.Subscribe(ctx)
	first := make(chan struct{})
	go e.runFeed(ctx, f.ps, first)
	return first
}

// runFeed receives the feed's messages until ctx ends; first is closed
// when the first subscription is confirmed or has failed.
func (e *engine) runFeed(ctx context.Context, ps *redis.PubSub, first chan struct{}) {
	f := &e.feed
	defer close(f.done)
	once := sync.OnceFunc(func() { close(first) })
	defer once()
	if err := ps.Subscribe(ctx, e.pauseChannel()); err != nil {
		once()
	}
	for {
		msg, err := ps.Receive(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			// A kill breaks the feed at once, where a sleeping process
			// makes no call to find out: the loss's date for a queue
			// rebuilt (queuedLocked) and a local share's start. Dated
			// before the break is counted, so that whoever sees the
			// break sees its date.
			e.seen.gone(e.o.clock.Now())
			f.broke()
			once()
			t := time.NewTimer(feedRetry)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				f.mu.Lock()
				f.live = true
				f.mu.Unlock()
				once()
			}
		case *redis.Message:
			e.hear(m.Payload)
		}
	}
}

// broke records a break in the subscription.
func (f *pauseFeed) broke() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.live {
		f.live = false
		f.epoch++
	}
}

// token returns what a sleeper takes before it sends its reservation:
// ok is false when the feed is not live.
func (f *pauseFeed) token() (epoch uint64, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.epoch, f.live
}

// heldSince reports whether the feed has been live without a break since
// token gave epoch.
func (f *pauseFeed) heldSince(epoch uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.live && f.epoch == epoch
}

// closeFeed ends the subscription, if one was opened, and waits for its
// goroutine; the feed does not open again.
func (e *engine) closeFeed() {
	f := &e.feed
	f.mu.Lock()
	f.closed = true
	stop, ps, done := f.stop, f.ps, f.done
	f.stop = nil
	f.mu.Unlock()
	if stop == nil {
		return
	}
	stop()
	ps.Close()
	<-done
	f.broke()
}

// publishPause tells the fleet's feeds of a pause stored until, server µs,
// from the server instant from (0: not known), and of its cause unless
// that is "" or not one a message may carry: the messages in one round
// trip, where it was stored from first, so that a sleeper moves by the
// exact amount when the pause's end reaches it. An error leaves the
// sleepers to their own check, and the cause unknown to the others.
func (e *engine) publishPause(until, from int64, cause string) {
	ctx, cancel := context.WithTimeout(context.Background(), e.o.callTimeout)
	defer cancel()
	_, _ = e.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		if from > 0 && from <= until {
			p.Publish(ctx, e.pauseChannel(), fromMessage(until, from))
		}
		p.Publish(ctx, e.pauseChannel(), until)
		if validCause(cause) {
			p.Publish(ctx, e.pauseChannel(), causeMessage(until, cause))
		}
		return nil
	})
}
