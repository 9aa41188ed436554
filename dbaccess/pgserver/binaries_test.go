package pgserver

import (
	"strings"
	"testing"
)

func TestMajorOf(t *testing.T) {
	t.Parallel()
	for dir, want := range map[string]int{
		"/usr/lib/postgresql/15/bin":                              15,
		"/opt/homebrew/opt/postgresql@17/bin":                     17,
		"/usr/local/opt/postgresql@16/bin":                        16,
		"/Applications/Postgres.app/Contents/Versions/14/bin":     14,
		"/Applications/Postgres.app/Contents/Versions/latest/bin": 0,
		"/usr/bin": 0,
	} {
		if got := majorOf(dir); got != want {
			t.Errorf("majorOf(%s) = %d, want %d", dir, got, want)
		}
	}
}

// TestNoBinariesSaysWhatToInstall: the error names the installer of the platform.
func TestNoBinariesSaysWhatToInstall(t *testing.T) {
	t.Parallel()
	for goos, want := range map[string]string{"linux": "apt-get install postgresql", "darwin": "brew install postgresql@"} {
		if got := noBinaries(goos); !strings.Contains(got, want) {
			t.Errorf("noBinaries(%s) = %q, want it to say %q", goos, got, want)
		}
	}
}
