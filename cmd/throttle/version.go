package main

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// version describes the build, from what the Go toolchain recorded in the
// binary: the module version ("(devel)" for a build from a checkout), the
// VCS revision and time when built inside one, and the Go version.
func version() string {
	var b strings.Builder
	b.WriteString("throttle")
	info, ok := debug.ReadBuildInfo()
	if !ok {
		b.WriteString(" (no build information)")
	} else {
		v := info.Main.Version
		if v == "" {
			v = "(unknown version)"
		}
		b.WriteString(" " + v)
		var rev, at, dirty string
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = ", modified"
				}
			}
		}
		if rev != "" {
			b.WriteString(" (" + rev + " " + at + dirty + ")")
		}
	}
	b.WriteString(" " + runtime.Version())
	return b.String()
}
