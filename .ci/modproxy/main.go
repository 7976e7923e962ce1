// Command modproxy lays out every module of a go.work as a file-based
// GOPROXY (GOPROXY=file://DIR), at one version, from the working tree. It
// lets CI install the modules the way a consumer would once that version is
// tagged, before anything is published: a consumer never sees go.work or a
// replace directive, so only a real proxy shows whether the go.mod files
// stand on their own.
//
//	go run . -work ../../go.work -o /tmp/proxy [-version v0.1.0]
//
// Without -version it serves the version at which the modules require one
// another, which must be one tagged version, not a pseudo-version. It
// prints module@version for each module served.
//
// The zips come from golang.org/x/mod/zip, as the go command's own do, so
// they leave out nested modules, vendor directories and VCS metadata
// exactly as a published version would.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/zip"
)

func main() {
	work := flag.String("work", "go.work", "the go.work `file` whose modules to serve")
	version := flag.String("version", "", "the `version` to serve every module at, e.g. v0.1.0 (default: the one the modules require each other at)")
	out := flag.String("o", "", "the proxy `directory` to write (created if missing)")
	flag.Parse()
	if *out == "" || flag.NArg() != 0 {
		flag.Usage()
		os.Exit(2)
	}
	mods, v, err := build(*work, *version, *out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "modproxy:", err)
		os.Exit(1)
	}
	for _, m := range mods {
		fmt.Printf("%s@%s\n", m.Path, v)
	}
}

// workModule is one module of the workspace: its path and its directory.
type workModule struct {
	Path, Dir string
	File      *modfile.File
	Mod       []byte
}

// build writes every module of the go.work file work to the proxy
// directory out at version, or if version is empty at the one the modules
// require each other at, and returns them and the version.
func build(work, version, out string) ([]workModule, string, error) {
	if version != "" && !isRelease(version) {
		return nil, "", fmt.Errorf("version %q is not a release version like v0.1.0", version)
	}
	mods, err := readWork(work)
	if err != nil {
		return nil, "", err
	}
	if err := checkRequires(mods, version); err != nil {
		return nil, "", err
	}
	if version == "" {
		version = intraRequires(mods)[0].Mod.Version
	}
	out, err = filepath.Abs(out)
	if err != nil {
		return nil, "", err
	}
	for _, m := range mods {
		// A proxy written inside a module would be zipped into it.
		if rel, err := filepath.Rel(m.Dir, out); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return nil, "", fmt.Errorf("output directory %s is inside module %s (%s)", out, m.Path, m.Dir)
		}
	}
	for _, m := range mods {
		if err := module.Check(m.Path, version); err != nil {
			return nil, "", err
		}
		if err := write(out, m, version); err != nil {
			return nil, "", fmt.Errorf("%s: %w", m.Path, err)
		}
	}
	return mods, version, nil
}

// requirement is one module of the workspace requiring another.
type requirement struct {
	GoMod string
	Mod   module.Version
}

// intraRequires returns every requirement of one module of mods on another.
func intraRequires(mods []workModule) []requirement {
	ours := map[string]bool{}
	for _, m := range mods {
		ours[m.Path] = true
	}
	var reqs []requirement
	for _, m := range mods {
		for _, r := range m.File.Require {
			if ours[r.Mod.Path] {
				reqs = append(reqs, requirement{filepath.Join(m.Dir, "go.mod"), r.Mod})
			}
		}
	}
	return reqs
}

// checkRequires fails unless every module requires the others at one
// release version: version, or if it is empty any one. Served at a
// version, a module that requires another at any other (a pseudo-version
// above all, which only a replace directive resolves) cannot be installed,
// and the go command would say so only as "not available" deep in a go get.
func checkRequires(mods []workModule, version string) error {
	reqs := intraRequires(mods)
	if len(reqs) == 0 {
		return errors.New("no module of the workspace requires another, so there is no version to check")
	}
	want := version
	if want == "" {
		// The release version most go.mod files name, so that the error
		// names the few that regressed rather than the many that did not.
		count := map[string]int{}
		for _, r := range reqs {
			if v := r.Mod.Version; isRelease(v) {
				if count[v]++; count[v] > count[want] {
					want = v
				}
			}
		}
	}
	var lines []string
	for _, r := range reqs {
		if r.Mod.Version != want {
			lines = append(lines, fmt.Sprintf("\t%s requires %s %s", r.GoMod, r.Mod.Path, r.Mod.Version))
		}
	}
	if len(lines) > 0 {
		at := want
		if at == "" {
			at = "one release version like v0.1.0"
		}
		return fmt.Errorf("every go.mod must require the workspace's other modules at %s, not a pseudo-version (.ci/release.sh VERSION rewrites them), but:\n%s",
			at, strings.Join(lines, "\n"))
	}
	return nil
}

// isRelease reports whether v is a version one would tag: canonical
// semver, not a pseudo-version.
func isRelease(v string) bool {
	return semver.IsValid(v) && semver.Canonical(v) == v && !module.IsPseudoVersion(v)
}

// readWork returns the modules that the go.work file at path uses.
func readWork(path string) ([]workModule, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	wf, err := modfile.ParseWork(path, data, nil)
	if err != nil {
		return nil, err
	}
	root := filepath.Dir(path)
	var mods []workModule
	for _, u := range wf.Use {
		dir := u.Path
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(root, dir)
		}
		dir, err := filepath.Abs(dir)
		if err != nil {
			return nil, err
		}
		gomod := filepath.Join(dir, "go.mod")
		data, err := os.ReadFile(gomod)
		if err != nil {
			return nil, err
		}
		f, err := modfile.Parse(gomod, data, nil)
		if err != nil {
			return nil, err
		}
		if f.Module == nil {
			return nil, fmt.Errorf("%s has no module line", gomod)
		}
		mods = append(mods, workModule{Path: f.Module.Mod.Path, Dir: dir, File: f, Mod: data})
	}
	if len(mods) == 0 {
		return nil, errors.New(path + " uses no module")
	}
	return mods, nil
}

// write adds module m at version to the proxy at out: the four files the
// GOPROXY protocol serves, under the case-escaped path and version.
func write(out string, m workModule, version string) error {
	escPath, err := module.EscapePath(m.Path)
	if err != nil {
		return err
	}
	escVer, err := module.EscapeVersion(version)
	if err != nil {
		return err
	}
	dir := filepath.Join(out, filepath.FromSlash(escPath), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	base := filepath.Join(dir, escVer)

	zf, err := os.Create(base + ".zip")
	if err != nil {
		return err
	}
	if err := zip.CreateFromDir(zf, module.Version{Path: m.Path, Version: version}, m.Dir); err != nil {
		zf.Close()
		return err
	}
	if err := zf.Close(); err != nil {
		return err
	}
	if err := os.WriteFile(base+".mod", m.Mod, 0o644); err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return err
	}
	if err := os.WriteFile(base+".info", info, 0o644); err != nil {
		return err
	}
	return addToList(filepath.Join(dir, "list"), version)
}

// addToList adds version to the list file unless it is there, so that
// serving a second version into the same directory keeps the first.
func addToList(path, version string) error {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	versions := strings.Fields(string(data))
	if slices.Contains(versions, version) {
		return nil
	}
	versions = append(versions, version)
	semver.Sort(versions)
	return os.WriteFile(path, []byte(strings.Join(versions, "\n")+"\n"), 0o644)
}
