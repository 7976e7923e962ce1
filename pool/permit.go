package pool

import "github.com/throttlekit/throttle"

// Permit is the Permit a Pool gives: its member's, which it settles and
// cancels, and the member that served it.
type Permit struct {
	throttle.Permit
	m    *member
	pool *Pool
}

// Member returns the member whose Gate the costs were taken from: the one
// the call is to be sent through.
func (p *Permit) Member() Member { return p.m.Member }

// Pool returns the Pool the Permit came from, for the caller to
// quarantine its member on the server's answer.
func (p *Permit) Pool() *Pool { return p.pool }
