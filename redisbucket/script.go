package redisbucket

import (
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// scriptSrc is the decision script; lua/bucket.lua describes its state,
// arguments and replies, which the constants and decoders below follow.
//
//go:embed lua/bucket.lua
var scriptSrc string

// script is shared by every limiter: go-redis sends EVALSHA and falls back
// to EVAL when the server answers NOSCRIPT (after a restart, a failover or
// SCRIPT FLUSH).
var script = redis.NewScript(scriptSrc)

// scriptHash is the script's SHA-1, which EVALSHA names it by.
var scriptHash = script.Hash()

// The general path's modes (ARGV[1]).
const (
	modeAcquire = "a" // all or nothing
	modeLease   = "l" // one limit: at least a, at most b tokens
	modePeek    = "p" // the wait and the levels, writing only what it learned
	modeSettle  = "s" // a permit's estimate corrected to its actual use
	modeDrain   = "d" // a server's word for the fleet: lower, pause
	modeTune    = "t" // a server's size of one limit
	modeReserve = "r" // take the costs now and reply the instant they are covered
	modeCancel  = "c" // a reservation given back before its instant
)

// The general path's arguments before the per-limit ones (ARGV[1..9]).
const generalHead = 9

// perLimit is the number of arguments per limit: capacity, num, den,
// unit, a, b.
const perLimit = 6

// Reply statuses.
const (
	statusDenied  = 0
	statusGranted = 1 // or settled, or reserved
	statusNever   = -1
	statusApplied = 2 // the permit was applied before: an idempotent retry
	// statusLate is a decision's whole reply, {3, now}, when it reached
	// the script past its deadline: nothing was applied (errLate).
	statusLate = 3
	// statusGeneral is a batch's whole reply when the state needs the
	// general path: each member is then sent alone.
	statusGeneral = -2
)

// Reply flags: flagReset when the state was garbage and the limits
// restarted empty (2 when the key was rebuilt from the client's view,
// which the client does not act on), and from flagTunedShift up a bit per
// limit that runs at a server's quota.
const (
	flagReset      = 1
	flagTunedShift = 2
)

// replyHead is the general reply's values before the levels: status,
// wait, amount, now, flags, live, paused.
const replyHead = 7

// result is a script reply.
type result struct {
	status int64 // 1 granted, 0 denied, -1 never, 2 already applied
	wait   time.Duration
	amount int64   // a lease's size; for a reservation, the limits left to take at its instant (bit i: limit i)
	now    int64   // the server time the script used, µs
	flags  int64   // 1 garbage state reset, 2 key rebuilt from the client's view
	live   int64   // live fleet members, when this call registered
	paused int64   // the end of a pause in force, server µs, or 0
	levels []int64 // tok, rem per limit
	seq    int64   // the call's number in the id's sequence (seqSuffix), or 0
	// wholeOnly: a fast-path reply, whose levels leave the fraction out
	wholeOnly bool
	// sent is when the call was sent, on this process's clock: the server
	// decided after it.
	sent time.Time
}

// leftLater reports whether a reservation's reply marks limit i as left to
// be taken at its instant (bucket.lua's mode r; bit i of amount).
func (r result) leftLater(i int) bool { return i < 50 && r.amount&(1<<i) != 0 }

// reset reports whether the script found garbage state.
func (r result) reset() bool { return r.flags&flagReset != 0 }

// tunedMask is the mask of limits (bit i for limit i < 50) that run at a
// server's quota.
func (r result) tunedMask() int64 { return r.flags >> flagTunedShift }

// errLate is a decision the script did not apply: it arrived past the
// deadline its client gave it.
var errLate = errors.New("redisbucket: the call reached Redis past its deadline, and nothing was applied")

// decodeReply reads a general-path reply for n limits.
func decodeReply(v []int64, n int) (result, error) {
	if len(v) == 2 && v[0] == statusLate {
		return result{}, errLate
	}
	var seq int64
	if len(v) == replyHead+2*n+1 {
		seq, v = v[len(v)-1], v[:len(v)-1]
	}
	if len(v) != replyHead+2*n {
		return result{}, fmt.Errorf("redisbucket: script replied %d values, want %d", len(v), replyHead+2*n)
	}
	return result{status: v[0], wait: time.Duration(v[1]) * time.Microsecond, amount: v[2], now: v[3], flags: v[4],
		live: v[5], paused: v[6], levels: v[replyHead:], seq: seq}, nil
}

// readFast reads a fast-path reply into r: status, wait, now and whole
// tokens, and the flags when the script fell through to its general path.
// (In place: the hot path's reply, not copied on its way.)
func (r *result) readFast(v []int64) error {
	if len(v) < 4 || len(v) > 6 {
		return fastLenErr(len(v))
	}
	// The fraction is not in the reply: an acquisition reports whole
	// tokens only, and one limit binds.
	r.status, r.wait, r.now = v[0], time.Duration(v[1])*time.Microsecond, v[2]
	r.levels, r.wholeOnly = []int64{v[3], 0}, true
	if len(v) >= 5 {
		r.flags = v[4]
	}
	if len(v) == 6 {
		r.paused = v[5]
	}
	return nil
}

// fastLenErr is the error of a fast-path reply of n values.
func fastLenErr(n int) error {
	return fmt.Errorf("redisbucket: script replied %d values, want 4 to 6", n)
}

// batchReply is a batch's reply: the server time, then status, wait and
// whole tokens per member.
type batchReply struct {
	v      []int64
	levels []int64 // tok, rem per member; the fraction is not replied
}

// decodeBatch reads the reply to a batch of k; general is true when the
// script asks for each member to be sent alone.
func decodeBatch(v []int64, k int) (b batchReply, general bool, err error) {
	if len(v) == 1 && v[0] == statusGeneral {
		return batchReply{}, true, nil
	}
	if len(v) != 1+3*k {
		return batchReply{}, false, fmt.Errorf("redisbucket: script replied %d values to a batch of %d, want %d", len(v), k, 1+3*k)
	}
	b = batchReply{v: v, levels: make([]int64, 2*k)}
	for i := range k {
		b.levels[2*i] = v[3+3*i]
	}
	return b, false, nil
}

// now is the server time the batch was decided at, µs.
func (b batchReply) now() int64 { return b.v[0] }

// member returns member i's result.
func (b batchReply) member(i int) result {
	r := b.v[1+3*i:]
	return result{status: r[0], wait: time.Duration(r[1]) * time.Microsecond, now: b.v[0], levels: b.levels[2*i : 2*i+2 : 2*i+2], wholeOnly: true}
}

// last returns the last member's levels, the batch's latest view.
func (b batchReply) last() []int64 { return b.levels[len(b.levels)-2:] }
