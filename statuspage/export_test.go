package statuspage

// SampleNow takes one sample of every limiter of p, as its ticker does,
// for tests that do not drive the ticker.
func SampleNow(p *Page) {
	for _, e := range p.snapshot(nil) {
		e.sample(p.clock.Now(), p.every, nil)
	}
}
