package statuspage

import (
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/pool"
)

// RegisterPool shows pl under name, its limits summed over the members
// that serve (pool.Pool's Status), and each member under name, "/" and
// the member's name: its own limits, and a quarantine as a pause until
// its end, caused "quarantined by the pool", with nothing left. Members
// added to pl later are not shown; register it again.
func (p *Page) RegisterPool(name string, pl *pool.Pool) {
	p.Register(name, pl)
	for _, m := range pl.Members() {
		p.Register(name+"/"+m.Name, memberView{Gate: m.Gate, pool: pl, name: m.Name})
	}
}

// memberView is a pool member as the page shows it: its Gate's state, with
// the pool's quarantine of it.
type memberView struct {
	throttle.Gate
	pool *pool.Pool
	name string
}

// quarantineCause is the Cause the page gives a quarantined member.
const quarantineCause = "quarantined by the pool"

func (v memberView) Status(dst []throttle.LimitStatus) []throttle.LimitStatus {
	m, ok := v.Gate.(throttle.Meter)
	if !ok {
		return dst
	}
	base := len(dst)
	dst = m.Status(dst)
	until := v.pool.Quarantined(v.name)
	if until.IsZero() {
		return dst
	}
	for i := base; i < len(dst); i++ {
		st := &dst[i]
		st.Remaining = 0
		if until.After(st.Paused) {
			st.Paused, st.Cause = until, quarantineCause
		}
		st.Reset = max(st.Reset, until.Sub(v.pool.Clock().Now()))
	}
	return dst
}

var _ throttle.Meter = memberView{}
