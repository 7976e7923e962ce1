package redisbucket

import (
	"context"
	"errors"
	"strconv"
	"time"
)

// call runs the script once, bounded by the call timeout. It brings the
// client's view of the levels (for a key that vanished), what the failure
// policy granted since the last call that reached Redis, and, when due,
// the fleet registration.
func (e *engine) call(ctx context.Context, mode string, permit string, a, b []int64, share int64, ttl time.Duration, extra ...any) (result, error) {
	return e.callAt(ctx, e.o.clock.Now(), mode, permit, a, b, share, ttl, extra...)
}

// backSuffix names, after the limiter's key, the key that records when
// the fleet came back on Redis after an outage (awayGrants).
const backSuffix = ":back"

// seqSuffix names, after the limiter's key, the id's sequence: with
// reservations, each reservation and each call that gives back takes the
// next number, so that a sleeper counts exactly the give-backs applied
// after its reservation (givebacks.go).
const seqSuffix = ":seq"

// timeArg is the script's time argument: "" for the server's TIME, or the
// time a test set (see serverTime) in µs.
func (e *engine) timeArg() string {
	if e.o.serverTime == nil {
		return ""
	}
	return strconv.FormatInt(e.o.serverTime().UnixMicro(), 10)
}

// callAt is call for a caller that has just read the clock: local (the
// clock is read once per decision and passed down). extra follows the
// per-limit arguments (mode t's). A decision carries the server time past
// which this client has given it up (bucket.lua, ARGV[2]), as the last
// view estimates it; a script that finds it past replies errLate, and
// the call goes once more without one: the estimate was wrong (a server
// whose clock jumped, a failover), since this client is still waiting.
func (e *engine) callAt(ctx context.Context, local time.Time, mode string, permit string, a, b []int64, share int64, ttl time.Duration, extra ...any) (result, error) {
	res, err := e.callOnce(ctx, local, true, mode, permit, a, b, share, ttl, extra...)
	if errors.Is(err, errLate) {
		res, err = e.callOnce(ctx, local, false, mode, permit, a, b, share, ttl, extra...)
	}
	return res, err
}

// callOnce is callAt's call, with a deadline when late is set.
func (e *engine) callOnce(ctx context.Context, local time.Time, late bool, mode string, permit string, a, b []int64, share int64, ttl time.Duration, extra ...any) (result, error) {
	keys := e.keys
	permitTTL := ""
	if permit != "" {
		keys = []string{e.key, e.key + ":p:" + permit}
		if mode == modeSettle {
			ttl = min(ttl, time.Minute)
		}
		permitTTL = strconv.FormatInt(ttl.Milliseconds(), 10)
	}
	now := e.timeArg()
	hint, charge, paid, sent := e.seen.get(local)
	member, fleetTTL := "", ""
	if e.o.reserve && (mode == modeReserve || mode == modeSettle || paid.refund != nil) {
		keys = append(keys[:len(keys):len(keys)], e.seqKey)
	}
	if paid.back {
		keys = append(keys[:len(keys):len(keys)], e.key+backSuffix)
	}
	if e.fl != nil && e.fl.due(local) {
		member, fleetTTL = e.fl.member, e.fl.ttlArg
		keys = append(keys[:len(keys):len(keys)], e.fl.key)
	}
	if mode == modeAcquire && permit == "" && charge == "" && member == "" && len(e.limits) == 1 && e.limits[0].unit == 1 {
		return e.decideFast(ctx, local, now, hint, sent, a[0])
	}
	if late && (mode == modeAcquire || mode == modeReserve || mode == modeLease || mode == modePeek) {
		// Late, if anything: the view's server time was read after its
		// call was sent; and the shared call deadline can end a window
		// after the call timeout (callCtx).
		if dl, ok := e.seen.serverAt(local, e.o.callTimeout+deadlineWindow(e.o.callTimeout)); ok {
			now += "/" + strconv.FormatInt(dl, 10)
		}
	}
	args := e.argv(keys, generalHead+perLimit*len(e.limits)+len(extra))
	args = append(args, mode, now, len(e.limits), permitTTL, share, hint, charge, member, fleetTTL)
	args = e.appendLimits(args, a, b)
	args = append(args, extra...)
	cctx, cancel := e.callCtx(ctx)
	defer cancel()
	e.st.calls.Add(1)
	v, err := e.run(cctx, args)
	var res result
	if err == nil {
		res, err = decodeReply(v, len(e.limits))
	}
	if err != nil {
		e.st.callErrors.Add(1)
		e.seen.lost(paid)
		if errors.Is(err, errLate) {
			// Nothing was applied: the give-backs go with the next call.
			e.seen.giveBack(paid.refund)
		}
		if member != "" {
			e.fl.failed()
		}
		return result{}, err
	}
	if mode == modeDrain && share > 0 && res.paused == res.now+share {
		// This call stored the pause: the queue moved from the script's
		// now (or from a pause in force, which pauses.setLocked keeps).
		e.pz.sawFrom(res.paused, res.now)
	} else {
		e.pz.saw(res.paused)
	}
	e.heard.Store(local.UnixNano())
	e.rc.sample(e.o.clock.Now(), res.now)
	res.sent = local
	if e.o.reserve {
		// Reserved sleepers go sooner for what this call gave back.
		g := netBack(paid)
		if mode == modeSettle && res.status == statusGranted {
			g = settledBack(g, a, b)
		}
		if g != nil && res.seq > 0 {
			e.pz.gaveBack(res.seq, g)
		}
	}
	landed := paid.refund != nil && e.seen.sentSince(sent)
	e.seen.set(e.limits, local, res.now, res.levels, true, paid, sent)
	if landed {
		// A call sent after this one took the give-backs it carried may
		// have been decided without them: its waiter decides again.
		e.est.settled()
	}
	e.tuned.Store(res.tunedMask())
	if res.reset() {
		e.st.stateResets.Add(1)
	}
	if member != "" {
		e.fl.registered(res.live)
		e.shareChanged(res.live)
	}
	return res, nil
}

// callFast is call on the script's fast path: one limit in µs, an
// acquisition without permit, charge or registration, with five arguments
// and a four-value reply (five when the script fell through to its general
// path, the fifth its flags; six when a pause is in force, the sixth its
// end).
func (e *engine) callFast(ctx context.Context, local time.Time, now string, hint []byte, sent uint64, cost int64) (result, error) {
	cctx, cancel := e.callCtx(ctx)
	defer cancel()
	e.st.calls.Add(1)
	args := e.argv(e.keys, 6)
	args = append(args, e.fastArgs[0], e.fastArgs[1], e.fastArgs[2], cost, hint)
	if now != "" {
		args = append(args, now)
	}
	v, err := e.run(cctx, args)
	var res result
	if err == nil {
		err = res.readFast(v)
	}
	if err != nil {
		e.st.callErrors.Add(1)
		return result{}, err
	}
	e.pz.saw(res.paused)
	e.tuned.Store(res.tunedMask())
	e.seen.set(e.limits, local, res.now, res.levels, false, carried{}, sent)
	e.heard.Store(local.UnixNano())
	e.rc.sample(e.o.clock.Now(), res.now)
	if res.reset() {
		e.st.stateResets.Add(1)
	}
	return res, nil
}

// appendLimits appends the per-limit arguments: each limit's shape, then
// a[i] and b[i] (0 for a nil b).
func (e *engine) appendLimits(args []any, a, b []int64) []any {
	for i, l := range e.limits {
		var bi int64
		if b != nil {
			bi = b[i]
		}
		args = append(args, l.args[0], l.args[1], l.args[2], l.args[3], a[i], bi)
	}
	return args
}
