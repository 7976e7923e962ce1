package redisbucket

import (
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// A pause's cause (what asked for it: "429 from api.example.com:
// Retry-After 20s") reaches the fleet on the pause feed, as a message of
// its own after the pause's: a process built before causes were sent
// reads the pause's bare integer as ever and ignores the other. Any client
// that can publish on the channel writes these messages, so the parser
// takes only a positive end and a short, printable cause, and a cause
// never sets a pause (pauses.told): it names the one heard, if it ends
// at the same µs.

// causePrefix starts a cause's message: "c<until µs> <cause>".
const causePrefix = "c"

// maxCause is the longest cause, in bytes, a message may carry: the
// Transport's are a status, a host and a header, a host name of at most 253 bytes among them, under it.
const maxCause = 512

// causeMessage is the feed's message naming cause for the pause ending at
// until (server µs).
func causeMessage(until int64, cause string) string {
	return causePrefix + strconv.FormatInt(until, 10) + " " + cause
}

// parseCause reads a cause's message; ok is false for anything else,
// including the pause's and a slowdown's messages.
func parseCause(payload string) (until int64, cause string, ok bool) {
	rest, found := strings.CutPrefix(payload, causePrefix)
	if !found {
		return 0, "", false
	}
	num, cause, found := strings.Cut(rest, " ")
	if !found || !validCause(cause) {
		return 0, "", false
	}
	until, err := strconv.ParseInt(num, 10, 64)
	if err != nil || until <= 0 || strconv.FormatInt(until, 10) != num {
		return 0, "", false
	}
	return until, cause, true
}

// validCause reports whether cause is one a message may carry: non-empty,
// at most maxCause bytes of UTF-8 with no control characters (it ends up
// in logs and on a status page).
func validCause(cause string) bool {
	if cause == "" || len(cause) > maxCause || !utf8.ValidString(cause) {
		return false
	}
	for _, r := range cause {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// fromPrefix starts the message of where a pause was stored from:
// "f<until µs> <from µs>", published just before the pause's own. The
// fleet's queue of reservations moved by until - from, and so do the
// instants of sleepers reserved before it (sleeper.target). A process
// built before these were sent ignores it.
const fromPrefix = "f"

// fromMessage is the feed's message that the pause ending at until was
// stored from the server instant from.
func fromMessage(until, from int64) string {
	return fromPrefix + strconv.FormatInt(until, 10) + " " + strconv.FormatInt(from, 10)
}

// parseFrom reads a from message: two positive integers as written, from
// at most until; ok is false for anything else.
func parseFrom(payload string) (until, from int64, ok bool) {
	rest, found := strings.CutPrefix(payload, fromPrefix)
	if !found {
		return 0, 0, false
	}
	u, f, found := strings.Cut(rest, " ")
	if !found {
		return 0, 0, false
	}
	until, err1 := strconv.ParseInt(u, 10, 64)
	from, err2 := strconv.ParseInt(f, 10, 64)
	if err1 != nil || err2 != nil || from <= 0 || from > until ||
		strconv.FormatInt(until, 10) != u || strconv.FormatInt(from, 10) != f {
		return 0, 0, false
	}
	return until, from, true
}

// hear applies one message of the pause feed: a pause's end, where it was
// stored from, its cause, or a slowdown; anything else is ignored.
func (e *engine) hear(payload string) {
	if until, err := strconv.ParseInt(payload, 10, 64); err == nil {
		e.pz.saw(until)
	} else if until, from, ok := parseFrom(payload); ok {
		e.pz.heardFrom(until, from)
	} else if until, cause, ok := parseCause(payload); ok {
		e.pz.told(until, cause)
	} else if i, t, ok := parseSlow(payload); ok {
		e.slowTo(i, t, e.o.clock.Now())
	}
}

// causeBook is what a Limiter knows of its own pauses' causes: one told
// (Limiter.Observe) for the pause PauseUntil will store until a local
// instant, as the core's buckets keep one (the Transport tells it just
// before it pauses), and the pause this process stored last, by its local
// instant and its end on the server's clock, for a cause told once that
// pause is in force (the Transport pauses, tells, and pauses again).
type causeBook struct {
	mu      sync.Mutex
	nextFor time.Time
	next    string
	ownFor  time.Time
	ownEnd  int64 // server µs
}

// tell keeps cause for the pause that will end at until, and returns the
// server end of the pause this process stored for until, 0 if none.
func (c *causeBook) tell(until time.Time, cause string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nextFor, c.next = until, cause
	if c.ownEnd > 0 && c.ownFor.Equal(until) {
		return c.ownEnd
	}
	return 0
}

// take returns the cause told for a pause ending at until, "" if none,
// and forgets it.
func (c *causeBook) take(until time.Time) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	cause := ""
	if c.next != "" && c.nextFor.Equal(until) {
		cause = c.next
	}
	c.nextFor, c.next = time.Time{}, ""
	return cause
}

// stored records, for a pause asked until the local instant until, that
// the pause in force ends at end (server µs), and reports whether that
// is this process's pause for until: asked now, when end is now + us (the
// server's now and the µs asked), or by an earlier call for the same
// instant.
func (c *causeBook) stored(until time.Time, end, now, us int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if end == now+us {
		c.ownFor, c.ownEnd = until, end
		return true
	}
	return c.ownEnd == end && c.ownFor.Equal(until)
}
