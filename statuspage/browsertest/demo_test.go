package browsertest

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var (
	demoShot  = flag.String("demo-screenshot", "", "write the screenshot of the page `throttle demo --status` serves to this file (default: the test's temporary directory)")
	demoWatch = flag.Int("demo-watch", 3, "how many redraws of the demo's page to check, about a second each; the demo's run is sized to outlast them")
)

// The demo's quota, which sizes its run: 20 requests a second.
const demoRate = 20

// demoLimit is the row of the demo's limiter on its page.
const demoLimit = "throttled client/requests"

// TestDemoInChromium builds cmd/throttle, runs `throttle demo --status`
// and loads its page in Chromium while the demo's throttled client runs.
// At each redraw the page shows the demo's limiter with the level that the
// page's own JSON, read just after, has within what the rate can move
// between the two instants; the chart redraws at least once a second and
// changes as it does. It saves a screenshot: docs/statuspage.png is one.
func TestDemoInChromium(t *testing.T) {
	if chromium() == "" {
		t.Skip("no chromium found (apt-get install -y chromium, or set THROTTLE_CHROMIUM): the demo's page is not tested in a browser")
	}
	// The throttled client's burst of 9, then 20 a second while the
	// browser starts (slowly on a loaded machine), the checks run and the
	// screenshot is taken; the demo is stopped then, whatever it has left.
	n := 9 + demoRate*(*demoWatch+30)
	url := startDemo(t, buildDemo(t), "--requests", fmt.Sprint(n), "--quota", fmt.Sprintf("%d/1s", demoRate))
	ctx := browse(t, url, 600)
	// Within about the demo's run: the page goes with it.
	ctx, cancel := context.WithTimeout(ctx, time.Duration(*demoWatch+10)*time.Second)
	defer cancel()
	// The first draw may have read the limiter in the instant between its
	// registration and the client's burst: start from the next.
	draws := waitDraw(t, ctx, 0)
	var points []string
	for range *demoWatch {
		draws = waitDraw(t, ctx, draws)
		r, at, pts := demoRow(t, ctx)
		v := pageJSON(t, url)
		dt := math.Abs(v.At.Sub(at).Seconds())
		if math.Abs(v.Level-r.Level) > demoRate*dt+1 {
			t.Errorf("the page shows level %.3f at %v, its JSON %.3f at %v: more than the rate moves in %.3fs, plus a request", r.Level, at, v.Level, v.At, dt)
		}
		t.Logf("shown level %.3f at %v; JSON %.3f, %.1fms later", r.Level, at.Format("15:04:05.000"), v.Level, 1000*v.At.Sub(at).Seconds())
		points = append(points, pts)
	}
	changes := 0
	for i := 1; i < len(points); i++ {
		if points[i] != points[i-1] {
			changes++
		}
	}
	if changes < len(points)/2 {
		t.Errorf("the chart changed %d times in %d redraws a second apart", changes, len(points))
	}
	redrawnEachSecond(t, ctx, *demoWatch)
	save(t, ctx, *demoShot, "statuspage.png")
}

// buildDemo builds cmd/throttle, in its own module, into the test's
// temporary directory.
func buildDemo(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "throttle")
	out, err := exec.Command("go", "build", "-C", filepath.Join("..", "..", "cmd", "throttle"), "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build cmd/throttle: %v\n%s", err, out)
	}
	return bin
}

// startDemo runs `throttle demo --status 127.0.0.1:0` with args and returns
// the page's address once the demo says it. The demo is stopped at the
// end of the test.
func startDemo(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"demo", "--status", "127.0.0.1:0"}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var rest strings.Builder
	done := make(chan error, 1)
	// The test has seen what it looks for by its end: the demo need not
	// run out its requests.
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		rest.WriteString(sc.Text() + "\n")
		if url, ok := strings.CutPrefix(sc.Text(), "status page at "); ok {
			go func() {
				io.Copy(io.Discard, stdout)
				done <- cmd.Wait()
			}()
			return url
		}
	}
	done <- cmd.Wait()
	t.Fatalf("throttle demo said no status page:\n%s%s", rest.String(), stderr.String())
	return ""
}
