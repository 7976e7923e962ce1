package hoststore_test

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/hoststore"
)

// childEnv names the role a test binary started by a test plays.
const childEnv = "HOSTSTORE_TEST_CHILD"

// The shared quota of the processes of TestSixteenProcessesAreExact.
const (
	childRate  = 4000 // tokens a second
	childBurst = 50
)

// runChild plays role, with its arguments in the environment, and
// returns the exit code.
func runChild(role string) int {
	var err error
	switch role {
	case "take":
		err = childTake(os.Getenv("HOSTSTORE_PATH"), os.Getenv("HOSTSTORE_OUT"))
	case "hold":
		err = childHold(os.Getenv("HOSTSTORE_PATH"))
	default:
		err = fmt.Errorf("no child role %q", role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// decisionClock is the real clock that remembers the last time it gave:
// a single-goroutine child reads from it the instant of the decision that
// TryAcquirePermit made, which the Limiter reads once, under the lock.
type decisionClock struct {
	clockwork.Clock
	last time.Time
}

func (c *decisionClock) Now() time.Time { c.last = c.Clock.Now(); return c.last }

// childTake asks for one token at a time for half a second and writes the
// instant of every grant, then the number of decisions, to out.
func childTake(path, out string) error {
	s, err := hoststore.Open(path)
	if err != nil {
		return err
	}
	defer s.Close()
	clk := &decisionClock{Clock: clockwork.NewRealClock()}
	l, err := hoststore.NewLimiter(s, "shared", childBurst, throttle.Per(childRate, time.Second), hoststore.WithClock(clk))
	if err != nil {
		return err
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	end := time.Now().Add(500 * time.Millisecond)
	var n int64
	for ; time.Now().Before(end); n++ {
		_, ok, err := l.TryAcquirePermit(1)
		if err != nil {
			return err
		}
		if ok {
			binary.Write(w, binary.LittleEndian, clk.last.UnixNano())
		}
	}
	binary.Write(w, binary.LittleEndian, -n) // the count, told apart by its sign
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// childHold takes the store's lock, says so, and holds it until killed.
func childHold(path string) error {
	lk, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if err := hoststore.LockFile(lk); err != nil {
		return err
	}
	fmt.Println("locked")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // blocks until killed
	return nil
}

// startChild starts the test binary in role with env; the test stops it
// by its PID if it is still running at the end.
func startChild(t *testing.T, role string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{childEnv + "=" + role}, env...)...)
	cmd.Stderr = os.Stderr
	return cmd
}

func itoa(i int) string { return strconv.Itoa(i) }
