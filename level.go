package throttle

// levelTo sets the level of b to n, at most its capacity: the one call
// that goes when a pause ends, whatever the level was, debt included (the
// server's refusal supersedes what the client had counted).
func (b *Bucket) levelTo(n int64) {
	g := b.lock()
	defer g.Mu.Unlock()
	now := g.Now()
	g.serve(now)
	b.Advance(&b.lvl, now)
	n = min(max(n, 0), b.Cap)
	if b.lvl.Tokens != n || b.lvl.Frac != 0 {
		b.lvl.Tokens, b.lvl.Frac = n, 0
		g.changed(now)
	}
}

// give returns n tokens to b, never above its capacity; queued waiters are
// re-timed.
func (b *Bucket) give(n int64) {
	g := b.lock()
	defer g.Mu.Unlock()
	now := g.Now()
	g.serve(now)
	b.Advance(&b.lvl, now)
	b.Give(&b.lvl, max(n, 0))
	g.changed(now)
}

// full reports whether b is at its capacity now: a Transport takes a call
// from a full bucket as one from a server's quota that is full too, and
// not refilling until the server sees the call.
func (b *Bucket) full() bool {
	g := b.lock()
	defer g.Mu.Unlock()
	now := g.Now()
	g.serve(now)
	b.Advance(&b.lvl, now)
	return b.lvl.Tokens >= b.Cap
}
