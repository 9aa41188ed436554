// Package version names the build of this module's programs: the string
// `git describe --tags --always --dirty` gave when it was built (the Makefile stamps it
// with -ldflags "-X main.version=…"), else what the Go toolchain recorded in the
// binary, else "dev"; and the three numbers a cf CLI plugin's metadata carries.
package version

import (
	"regexp"
	"runtime/debug"
	"strconv"
)

// Dev is the version of a build that carries none.
const Dev = "dev"

// Of returns stamped when set; else, from info (nil when the binary has none), the
// main module's version (set by `go install module@version`), or the VCS revision
// (12 hex digits, "-dirty" when the tree was modified); else Dev.
func Of(stamped string, info *debug.BuildInfo) string {
	if stamped != "" {
		return stamped
	}
	if info == nil {
		return Dev
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision":
			rev = s.Value
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "-dirty"
		}
	}
	if rev == "" {
		return Dev
	}
	return rev[:min(len(rev), 12)] + dirty
}

// semver matches the release a version starts with: v1.2.3, 1.2.3, and what git
// describe adds after a tag (v1.2.3-4-gabcdef0-dirty) or a pre-release (v1.2.3-rc.1).
var semver = regexp.MustCompile(`^v?(\d{1,9})\.(\d{1,9})\.(\d{1,9})(?:[-+].*)?$`)

// Numbers returns the major, minor and patch numbers v starts with, or three zeros
// (which `cf plugins` shows as N/A) when it names no release, e.g. a bare commit hash
// from a clone without tags.
func Numbers(v string) (major, minor, patch int) {
	m := semver.FindStringSubmatch(v)
	if m == nil {
		return 0, 0, 0
	}
	major, _ = strconv.Atoi(m[1])
	minor, _ = strconv.Atoi(m[2])
	patch, _ = strconv.Atoi(m[3])
	return major, minor, patch
}

// PushedByEnv is the environment variable in which the plugin gives the programs it
// pushes (cmd/cfbench) its own version, so that one of another version can refuse to
// start.
const PushedByEnv = "CFBENCH_VERSION"
