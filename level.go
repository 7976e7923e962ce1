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
