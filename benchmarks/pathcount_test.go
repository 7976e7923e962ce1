package benchmarks

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// maxPlainPathFiles is issue 37's bound on the files a plain 200 through
// the Transport enters.
const maxPlainPathFiles = 8

// TestPlainPathFiles counts the library's files a plain 200 through a
// Transport over an in-process Limiter enters: internal/pathcount, built
// with coverage of every package of the library, clears its counters
// after a warm-up, makes one call and writes them; every file with a
// statement run counts, whether its function was inlined or not. It
// builds a program, so it runs only with THROTTLE_BENCH_PATH=1 (.ci/run
// sets it).
func TestPlainPathFiles(t *testing.T) {
	if os.Getenv("THROTTLE_BENCH_PATH") == "" {
		t.Skip("THROTTLE_BENCH_PATH=1 builds a program with coverage and counts the files of one call")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "pathcount")
	build := exec.Command("go", "build", "-cover", "-covermode=atomic",
		"-coverpkg=github.com/throttlekit/throttle/...", "-o", bin, "./internal/pathcount")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	counters, meta := filepath.Join(dir, "counters"), filepath.Join(dir, "meta")
	for _, d := range []string{counters, meta} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	run := exec.Command(bin, counters)
	run.Env = append(os.Environ(), "GOCOVERDIR="+meta)
	if b, err := run.CombinedOutput(); err != nil {
		t.Fatalf("pathcount: %v\n%s", err, b)
	}
	text := filepath.Join(dir, "cover.txt")
	if b, err := exec.Command("go", "tool", "covdata", "textfmt", "-i="+counters, "-o="+text).CombinedOutput(); err != nil {
		t.Fatalf("covdata: %v\n%s", err, b)
	}
	files := enteredFiles(t, text)
	t.Logf("a plain 200 enters %d files: %s", len(files), strings.Join(files, " "))
	if len(files) > maxPlainPathFiles {
		t.Errorf("a plain 200 enters %d files of the library, want at most %d", len(files), maxPlainPathFiles)
	}
}

// enteredFiles returns the library's files with a statement run in the
// coverage profile at path, the counting program's own left out.
func enteredFiles(t *testing.T, path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) != 3 || f[2] == "0" {
			continue
		}
		file, _, _ := strings.Cut(f[0], ":")
		if !strings.Contains(file, "/internal/pathcount/") {
			seen[strings.TrimPrefix(file, "github.com/throttlekit/throttle/")] = true
		}
	}
	var files []string
	for f := range seen {
		files = append(files, f)
	}
	sort.Strings(files)
	return files
}
