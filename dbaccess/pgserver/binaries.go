package pgserver

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
)

// ErrNoBinaries means no PostgreSQL server binaries were found. Its text names the
// package to install.
var ErrNoBinaries = errors.New(noBinaries(runtime.GOOS))

// noBinaries is ErrNoBinaries' text on goos: where FindBinDir looked, what to install.
func noBinaries(goos string) string {
	if goos == "darwin" {
		return "no PostgreSQL server binaries (initdb, postgres) found on PATH, in `pg_config --bindir`, in Homebrew's opt/postgresql@N/bin or in Postgres.app: install them (brew install postgresql@17), or give a results database with --db"
	}
	return "no PostgreSQL server binaries (initdb, postgres) found on PATH, in `pg_config --bindir` or in /usr/lib/postgresql/*/bin: install the Debian package postgresql (apt-get install postgresql), or run scripts/install-deps.sh"
}

// libDirGlob is where Debian and Ubuntu install each major version's server binaries;
// they are not on PATH there. A variable only so that a test can point it elsewhere.
var libDirGlob = "/usr/lib/postgresql/*/bin"

// macDirGlobs are where Homebrew (Apple silicon, then Intel) and Postgres.app keep each
// major version's binaries on macOS, not on PATH for Homebrew's versioned formulae.
var macDirGlobs = []string{"/opt/homebrew/opt/postgresql@*/bin", "/usr/local/opt/postgresql@*/bin", "/Applications/Postgres.app/Contents/Versions/*/bin"}

// FindBinDir returns the directory holding initdb and postgres: the first of PATH,
// `pg_config --bindir`, and the newest /usr/lib/postgresql/N/bin that has both (on
// macOS: the newest of Homebrew's postgresql@N, then Postgres.app's versions).
func FindBinDir() (string, error) {
	var candidates []string
	if p, err := exec.LookPath("initdb"); err == nil {
		// /usr/local/bin/initdb may be a symlink into the real bin dir, next to which
		// postgres lives even when postgres itself is not on PATH.
		if real, err := filepath.EvalSymlinks(p); err == nil {
			candidates = append(candidates, filepath.Dir(real))
		}
		candidates = append(candidates, filepath.Dir(p))
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		candidates = append(candidates, strings.TrimSpace(string(out)))
	}
	globs := []string{libDirGlob}
	if runtime.GOOS == "darwin" {
		globs = macDirGlobs
	}
	for _, g := range globs {
		dirs, _ := filepath.Glob(g)
		sort.Slice(dirs, func(i, j int) bool { return majorOf(dirs[i]) > majorOf(dirs[j]) })
		candidates = append(candidates, dirs...)
	}
	for _, d := range candidates {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", ErrNoBinaries
}

// majorOf extracts N from /usr/lib/postgresql/N/bin (Postgres.app: Versions/N/bin)
// and from Homebrew's postgresql@N/bin; 0 when it is not a number.
func majorOf(binDir string) int {
	v := filepath.Base(filepath.Dir(binDir))
	if _, after, ok := strings.Cut(v, "@"); ok {
		v = after
	}
	n, _ := strconv.Atoi(v)
	return n
}

func isExec(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// serverMajor runs `postgres --version` and returns its major version ("15").
func serverMajor(binDir string) (string, error) {
	out, err := exec.Command(filepath.Join(binDir, "postgres"), "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s/postgres --version: %w", binDir, err)
	}
	// "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)"
	fields := strings.Fields(string(out))
	if len(fields) < 3 {
		return "", fmt.Errorf("%s/postgres --version printed %q", binDir, out)
	}
	major, _, _ := strings.Cut(fields[2], ".")
	return major, nil
}
