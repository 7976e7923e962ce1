package hoststore_test

import (
	"bufio"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/throttlekit/throttle/hoststore"
)

// TestSixteenProcessesAreExact runs 16 OS processes on one quota through
// one file, each asking as fast as it can for half a second, and checks
// every window of the grants' instants against rate·w + burst.
func TestSixteenProcessesAreExact(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 16 processes")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "quota")
	s := open(t, path) // created once, before the processes race to
	_ = s
	var cmds []*os.Process
	for i := range 16 {
		cmd := startChild(t, "take", "HOSTSTORE_PATH="+path, "HOSTSTORE_OUT="+filepath.Join(dir, "grants"+itoa(i)))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd.Process)
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	}
	for _, p := range cmds {
		st, err := p.Wait()
		if err != nil || !st.Success() {
			t.Fatalf("child %d: %v %v", p.Pid, st, err)
		}
	}
	var grants []int64
	var decisions int64
	for i := range 16 {
		g, n := readGrants(t, filepath.Join(dir, "grants"+itoa(i)))
		grants = append(grants, g...)
		decisions += n
	}
	if len(grants) == 0 {
		t.Fatalf("no grants in %d decisions", decisions)
	}
	slices.Sort(grants)
	t.Logf("%d decisions, %d grants over %v", decisions, len(grants), time.Duration(grants[len(grants)-1]-grants[0]))
	if len(grants) < childBurst {
		t.Fatalf("only %d grants", len(grants))
	}
	// For each grant, the grants from it on within a window w must number
	// at most rate·w + burst; the windows that end at a grant are the
	// tightest, so checking those covers every window.
	for i := range grants {
		for j := i; j < len(grants); j++ {
			w := time.Duration(grants[j] - grants[i])
			if allowed := float64(childRate)*w.Seconds() + childBurst; float64(j-i+1) > allowed+1e-9 {
				t.Fatalf("%d grants in %v, at most %.2f allowed", j-i+1, w, allowed)
			}
			if w > time.Second {
				break
			}
		}
	}
}

func readGrants(t *testing.T, path string) (grants []int64, decisions int64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := bufio.NewReader(f)
	for {
		var v int64
		if err := binary.Read(r, binary.LittleEndian, &v); err == io.EOF {
			return grants, decisions
		} else if err != nil {
			t.Fatal(err)
		}
		if v < 0 {
			decisions = -v
		} else {
			grants = append(grants, v)
		}
	}
}

// TestKilledLockHolderLeavesNoOneStuck kills -9 a process holding the
// store's lock; the next decision goes through.
func TestKilledLockHolderLeavesNoOneStuck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "quota")
	s := open(t, path)
	cmd := startChild(t, "hold", "HOSTSTORE_PATH="+path)
	stdin, _ := cmd.StdinPipe()
	defer stdin.Close()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "locked\n" {
		t.Fatalf("the child said %q, %v", line, err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.Spent(t.Context(), "k", time.Unix(0, 0))
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("a decision went through while another process held the lock: %v", err)
	case <-time.After(50 * time.Millisecond): // bounded: shows the lock is held
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	timer := time.NewTimer(10 * time.Second)
	defer timer.Stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-timer.C:
		t.Fatal("stuck 10s after the lock holder was killed")
	}
	_ = hoststore.ErrCorrupt
}
