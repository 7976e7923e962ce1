package redisbucket

import (
	"strconv"
	"time"
)

// awayGrants is what the failure policy granted while this process was
// away from Redis, by when: the fleet's first process back records its
// return in the back key and takes the key as at most empty, which counts
// every grant the fleet made from its local shares until then; only what a
// process granted after that instant is charged on top (bucket.lua,
// ARGV[7]). Charging all of it would count the outage's quota twice: once
// in the key taken as empty, once in the charges.
type awayGrants struct {
	fellLocal time.Time     // when this process fell back, on its clock
	fellAt    int64         // the same instant on the server's clock, µs (0: not known)
	width     time.Duration // of a slot
	slots     [][]int64     // grants per limit, slot j from fellLocal + j*width
}

// maxAwaySlots bounds the slots a return carries: a longer time away
// widens each slot instead (the slot that holds the return is charged
// whole, so a wider slot charges more, never less).
const maxAwaySlots = 64

// firstAwaySlot is a slot's width when a process falls back: about what
// a fleet's calls to Redis take to notice an outage, so that a short
// outage charges little beyond what was granted after the return.
const firstAwaySlot = 10 * time.Millisecond

// start begins a time away at local, serverNow being the server's clock
// then as the last view gives it (0 without one).
func (a *awayGrants) start(local time.Time, serverNow int64) {
	a.fellLocal, a.fellAt, a.width = local, serverNow, firstAwaySlot
	a.slots = a.slots[:0]
}

// add records costs granted at local.
func (a *awayGrants) add(local time.Time, costs []int64) {
	if a.fellAt == 0 {
		return
	}
	j := int(max(local.Sub(a.fellLocal), 0) / a.width)
	for j >= maxAwaySlots {
		a.widen()
		j = int(max(local.Sub(a.fellLocal), 0) / a.width)
	}
	for len(a.slots) <= j {
		a.slots = append(a.slots, make([]int64, len(costs)))
	}
	for i, c := range costs {
		if c > 0 && i < len(a.slots[j]) {
			a.slots[j][i] += c
		}
	}
}

// widen doubles the slots' width, merging them in pairs.
func (a *awayGrants) widen() {
	a.width *= 2
	for j := range a.slots {
		if j%2 == 0 {
			a.slots[j/2] = a.slots[j]
			continue
		}
		for i, c := range a.slots[j] {
			a.slots[j/2][i] += c
		}
	}
	a.slots = a.slots[:(len(a.slots)+1)/2]
}

// appendArg appends the return's head of ARGV[7] for n limits:
// "b<fellAt> <width µs> <k>" and k slots of n grants each, with a capital
// B when the fleet's failure policy grants without Redis (spends).
func (a *awayGrants) appendArg(buf []byte, n int, spends bool) []byte {
	head := byte('b')
	if spends {
		head = 'B'
	}
	buf = strconv.AppendInt(append(buf, head), a.fellAt, 10)
	buf = strconv.AppendInt(append(buf, ' '), a.width.Microseconds(), 10)
	buf = strconv.AppendInt(append(buf, ' '), int64(len(a.slots)), 10)
	for _, s := range a.slots {
		for i := range n {
			var c int64
			if i < len(s) {
				c = s[i]
			}
			buf = strconv.AppendInt(append(buf, ' '), c, 10)
		}
	}
	return buf
}
