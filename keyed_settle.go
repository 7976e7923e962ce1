package throttle

// settle is Limiter.Settle on key's limiter. A key without a Limiter is
// settled on its compact record when what it gives back and is charged
// leaves every level between empty and full; a charge into debt, which a
// compact record cannot hold, makes the key's Limiter and settles there.
// A key dropped since the costs were taken is settled as the fresh key it
// is: what it gives back finds it full.
func (k *Keyed[K]) settle(key K, taken, actual []int64) error {
	s, tag := k.shard(key)
	s.mu.Lock()
	e, now, steps, err := s.find(k, key, tag, nil, findForce)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	if e.held() == nil && e.settleCompact(taken, actual, now) {
		s.sweep(now, steps)
		s.mu.Unlock()
		if k.obs != nil {
			e.prof().observeSettled(k.obs, taken, actual)
		}
		return nil
	}
	l := k.materialise(e).limiter()
	s.sweep(now, steps)
	s.mu.Unlock()
	return l.Settle(taken, actual)
}

// settleCompact settles a compact key at now and reports true, or reports
// false and changes nothing when the costs are not valid (the Limiter
// says why) or a charge would leave a level below empty.
func (e *entry[K]) settleCompact(taken, actual []int64, now int64) bool {
	p := e.prof()
	n := len(p.shapes)
	if len(taken) != n || len(actual) != n || n > len(oneEach) {
		return false
	}
	var ls [len(oneEach)]level
	for i := range n {
		if taken[i] < 0 || actual[i] < 0 {
			return false
		}
		sh, l := &p.shapes[i], e.get(i)
		sh.Advance(&l, now)
		switch d := actual[i] - taken[i]; {
		case d < 0:
			sh.Give(&l, -d)
		case !sh.Inf && l.Tokens < d:
			return false
		default:
			l.Take(d)
		}
		ls[i] = l
	}
	for i := range n {
		e.set(i, ls[i])
	}
	return true
}

func (p *profile) observeSettled(o Observer, taken, actual []int64) {
	for i := range p.shapes {
		if taken[i] != 0 || actual[i] != 0 {
			o.Observe(Event{Kind: EventSettled, Limit: p.limits[i].Name, Cost: actual[i], Estimate: taken[i]})
		}
	}
}
