package redisbucket

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A rate lowered by Tune in one process must stretch the reservations
// sleeping in every process: they were timed at the rate before, and the
// queue ahead of them now drains at the lowered one. The process that
// lowers it publishes the stored shape on the pause feed's channel; each
// feed (the publisher's own too) stretches its sleepers once per shape.
// A message lost while a feed is down leaves that process's sleepers at
// their instants, as before the feed carried slowdowns.

// slowPrefix starts a slowdown's message; a pause's is a bare integer.
const slowPrefix = "t"

// slowMessage is the feed's message for limit i lowered to shape t
// (capacity, num, den, unit, as mode t stores it).
func slowMessage(i int, t [4]int64) string {
	return fmt.Sprintf("%s%d %d %d %d %d", slowPrefix, i, t[0], t[1], t[2], t[3])
}

// parseSlow reads a slowdown's message; ok is false for anything else,
// including a pause's message and shapes no limit could run at.
func parseSlow(payload string) (i int, t [4]int64, ok bool) {
	rest, found := strings.CutPrefix(payload, slowPrefix)
	if !found {
		return 0, t, false
	}
	f := strings.Split(rest, " ")
	if len(f) != 5 {
		return 0, t, false
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n < 0 {
		return 0, t, false
	}
	for k := range t {
		v, err := strconv.ParseInt(f[k+1], 10, 64)
		if err != nil || v <= 0 {
			return 0, t, false
		}
		t[k] = v
	}
	return n, t, true
}

// slowTo stretches this process's reserved sleepers for limit i lowered
// to shape t at now, unless t is the shape it last stretched them for; it
// reports whether it did.
func (e *engine) slowTo(i int, t [4]int64, now time.Time) bool {
	if i < 0 || i >= len(e.limits) || e.slows.known(i, t) {
		return false
	}
	e.slows.sent(i, t, now)
	cfg := e.limits[i]
	old := float64(cfg.num) / float64(cfg.den*cfg.unit)
	if f := old / (float64(t[1]) / float64(t[2]*t[3])); f > 1 {
		e.pz.slowed(f, now)
	}
	return true
}

// publishSlow tells the fleet's feeds that limit i now runs at shape t.
// An error leaves the other processes' sleepers at their instants.
func (e *engine) publishSlow(i int, t [4]int64) {
	ctx, cancel := context.WithTimeout(context.Background(), e.o.callTimeout)
	defer cancel()
	_ = e.client.Publish(ctx, e.pauseChannel(), slowMessage(i, t)).Err()
}
