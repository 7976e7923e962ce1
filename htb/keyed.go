package htb

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/throttlekit/throttle"
)

// ErrClassRemoved is returned by calls on a class that was removed from
// its hierarchy.
var ErrClassRemoved = errors.New("htb: class was removed")

// Keyed is a set of classes under one parent, one per key (a
// tenant, a team, an API key), each made on the key's first use from the
// Config its config returns: an organisation's quota shared by
// tenants who each have a guarantee and borrow what the others leave.
//
// A key's class is dropped by a sweep once it is idle: its guarantee and
// ceiling buckets full, nobody waiting. Sweep runs one; so does adding a
// key once the keys held have doubled since the last. Its guarantee then goes back to the
// parent, so that the guarantees of the keys in use, not of every key ever
// seen, must fit in the parent's; a key made again starts with as much of
// its burst as the parent's spare covers. When a new key's guarantee does
// not fit, Sweep runs once before the key is refused.
//
// A Keyed is safe for concurrent use.
type Keyed[K comparable] struct {
	parent *Class
	config func(K) Config
	mu     sync.Mutex
	m      map[K]*Class
	next   int // sweep when a new key would make this many
}

// NewKeyed returns an empty set of classes under parent, key K
// getting the class config(K) describes. config must be deterministic.
func NewKeyed[K comparable](parent *Class, config func(K) Config) *Keyed[K] {
	return &Keyed[K]{parent: parent, config: config, m: map[K]*Class{}, next: minKeyedSweep}
}

// minKeyedSweep is the fewest keys held before new keys trigger a sweep.
const minKeyedSweep = 64

// Class returns key's class, making it if needed.
func (k *Keyed[K]) Class(key K) (*Class, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if c := k.m[key]; c != nil && !c.isRemoved() {
		return c, nil
	}
	if len(k.m) >= k.next {
		// Amortized: the keys double between sweeps, so memory follows
		// the keys in use.
		k.sweepLocked()
		k.next = max(minKeyedSweep, 2*len(k.m))
	}
	cfg := k.config(key)
	c, err := k.parent.NewClass(cfg)
	if err != nil {
		k.sweepLocked()
		if c, err = k.parent.NewClass(cfg); err != nil {
			return nil, fmt.Errorf("htb: class for key %v: %w", key, err)
		}
	}
	k.m[key] = c
	return c, nil
}

// TryAcquire is Class.TryAcquire on key's class.
func (k *Keyed[K]) TryAcquire(key K, cost int64) (bool, error) {
	for {
		c, err := k.Class(key)
		if err != nil {
			return false, err
		}
		ok, err := c.TryAcquire(cost)
		if !errors.Is(err, ErrClassRemoved) {
			return ok, err
		}
	}
}

// Acquire is Class.Acquire on key's class.
func (k *Keyed[K]) Acquire(ctx context.Context, key K, cost int64) error {
	for {
		c, err := k.Class(key)
		if err != nil {
			return err
		}
		if err = c.Acquire(ctx, cost); !errors.Is(err, ErrClassRemoved) {
			return err
		}
	}
}

// AcquirePermit is Class.AcquirePermit on key's class.
func (k *Keyed[K]) AcquirePermit(ctx context.Context, key K, cost int64) (throttle.Permit, error) {
	for {
		c, err := k.Class(key)
		if err != nil {
			return nil, err
		}
		p, err := c.AcquirePermit(ctx, cost)
		if !errors.Is(err, ErrClassRemoved) {
			return p, err
		}
	}
}

// Len returns the number of keys that have a class.
func (k *Keyed[K]) Len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.m)
}

// Sweep drops the class of every idle key and returns how many it
// dropped.
func (k *Keyed[K]) Sweep() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.sweepLocked()
}

func (k *Keyed[K]) sweepLocked() int {
	n := 0
	for key, c := range k.m {
		if c.removeIfIdle() {
			delete(k.m, key)
			n++
		}
	}
	return n
}

func (c *Class) isRemoved() bool {
	d := c.lock()
	defer d.Mu.Unlock()
	return c.removed
}

// removeIfIdle removes c if it has no children and no waiters and its
// buckets are full.
func (c *Class) removeIfIdle() bool {
	d := c.lock()
	defer d.Mu.Unlock()
	if c.removed {
		return true
	}
	if c.parent == nil || len(c.kids) > 0 || c.Head != nil {
		return false
	}
	now := max(d.Now(), d.seen)
	// Copies: a level advanced alone would make its parent's spare wrong.
	gl, cl := c.gl, c.cl
	c.g.Advance(&gl, now)
	c.c.Advance(&cl, now)
	if gl.Tokens < c.g.Cap || cl.Tokens < c.c.Cap {
		return false
	}
	c.removeLocked(d, now)
	return true
}
