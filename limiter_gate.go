package throttle

// TryAcquirePermit is TryAcquire returning the Permit for the costs taken:
// what LimitHandler gives a handler to settle. p is nil when ok is false.
func (l *Limiter) TryAcquirePermit(costs ...int64) (p Permit, ok bool, err error) {
	ok, err = l.TryAcquire(costs...)
	if !ok || err != nil {
		return nil, ok, err
	}
	return newPermit(l.bs, costs), true, nil
}

// Limits describes the limiter's buckets in cost order: name, capacity and
// rate as they are now.
func (l *Limiter) Limits() []Limit {
	ls := make([]Limit, len(l.bs))
	for i, b := range l.bs {
		ls[i] = Limit{Name: b.name, Capacity: b.Capacity(), Rate: b.Rate()}
	}
	return ls
}

// Lower brings bucket i (in cost order) down to at most remaining tokens,
// as Bucket.Drain does; it never raises a level, and an i out of range
// changes nothing.
func (l *Limiter) Lower(i int, remaining int64) {
	if i >= 0 && i < len(l.bs) {
		l.bs[i].Drain(remaining)
	}
}

// Status appends the state of every bucket, in cost order, to dst.
func (l *Limiter) Status(dst []LimitStatus) []LimitStatus {
	return append(dst, limitStatus(l, nil)...)
}
