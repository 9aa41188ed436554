package version

import (
	"runtime/debug"
	"testing"
)

func TestOf(t *testing.T) {
	vcs := func(settings ...string) *debug.BuildInfo {
		info := &debug.BuildInfo{Main: debug.Module{Path: "github.com/cf-benchmark/cf-benchmark", Version: "(devel)"}}
		for i := 0; i+1 < len(settings); i += 2 {
			info.Settings = append(info.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return info
	}
	for _, c := range []struct {
		name    string
		stamped string
		info    *debug.BuildInfo
		want    string
	}{
		{"stamped wins", "v1.2.3-4-gabcdef0-dirty", &debug.BuildInfo{Main: debug.Module{Version: "v9.9.9"}}, "v1.2.3-4-gabcdef0-dirty"},
		{"go install module@version", "", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, "v1.4.0"},
		{"vcs revision", "", vcs("vcs.revision", "0123456789abcdef0123456789abcdef01234567", "vcs.modified", "false"), "0123456789ab"},
		{"vcs revision, modified", "", vcs("vcs.modified", "true", "vcs.revision", "0123456789abcdef0123"), "0123456789ab-dirty"},
		{"short revision", "", vcs("vcs.revision", "abc"), "abc"},
		{"devel without vcs", "", vcs(), Dev},
		{"no build info", "", nil, Dev},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Of(c.stamped, c.info); got != c.want {
				t.Errorf("Of(%q, …) = %q, want %q", c.stamped, got, c.want)
			}
		})
	}
}

func TestNumbers(t *testing.T) {
	for _, c := range []struct {
		in                  string
		major, minor, patch int
	}{
		{"v1.2.3", 1, 2, 3},
		{"1.2.3", 1, 2, 3},
		{"v0.10.0-14-g1a2b3c4", 0, 10, 0},
		{"v2.0.1-3-g1a2b3c4-dirty", 2, 0, 1},
		{"v1.2.3-rc.1", 1, 2, 3},
		{"v1.2.3+meta", 1, 2, 3},
		{"1a2b3c4", 0, 0, 0},
		{"1a2b3c4-dirty", 0, 0, 0},
		{"dev", 0, 0, 0},
		{"", 0, 0, 0},
		{"v1.2", 0, 0, 0},
		{"v1.2.3.4", 0, 0, 0},
		{"v1.2.3junk", 0, 0, 0},
		{"v99999999999.0.0", 0, 0, 0},
	} {
		major, minor, patch := Numbers(c.in)
		if major != c.major || minor != c.minor || patch != c.patch {
			t.Errorf("Numbers(%q) = %d.%d.%d, want %d.%d.%d", c.in, major, minor, patch, c.major, c.minor, c.patch)
		}
	}
}
