package benchmarks

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBinarySize builds the same small program twice, once on a
// throttle.Bucket and once on golang.org/x/time/rate, and holds the first
// to 1.2 times the size of the second: a program that uses only the core
// must not link the HTTP layer, net/http or log/slog. Sizes depend on the
// toolchain, not on the machine's load, so this is a test and not a
// benchmark.
func TestBinarySize(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two programs")
	}
	dir := t.TempDir()
	size := func(pkg string) int64 {
		t.Helper()
		out := filepath.Join(dir, filepath.Base(pkg))
		cmd := exec.Command("go", "build", "-o", out, pkg)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, b)
		}
		fi, err := os.Stat(out)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	bucket := size("./internal/binsize/bucket")
	xrate := size("./internal/binsize/xrate")
	ratio := float64(bucket) / float64(xrate)
	t.Logf("a Bucket-only program %d B, the same on x/time/rate %d B: %.2fx", bucket, xrate, ratio)
	if ratio > 1.2 {
		deps, _ := exec.Command("go", "list", "-deps", "./internal/binsize/bucket").Output()
		var heavy []string
		for _, d := range strings.Fields(string(deps)) {
			if d == "net/http" || d == "log/slog" || strings.HasPrefix(d, "github.com/throttlekit/throttle/") {
				heavy = append(heavy, d)
			}
		}
		t.Errorf("the Bucket-only binary is %.2fx x/time/rate's, want at most 1.2x; it links %v", ratio, heavy)
	}
}
