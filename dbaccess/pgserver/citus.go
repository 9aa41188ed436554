package pgserver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// ErrNoCitus means the Citus extension is not installed beside the server binaries
// (scripts/install-citus.sh installs it).
var ErrNoCitus = errors.New("the Citus extension is not installed")

// citusSettings are a Citus node's start settings: the extension preloaded; room for
// the maintenance daemon, a background worker, that every database with the extension
// keeps (the default of 8 runs out at the seventh); and no usage reports to Citus
// Data, which a build that links libcurl sends by default.
var citusSettings = []string{"-c", "shared_preload_libraries=citus", "-c", "max_worker_processes=64",
	"-c", "citus.enable_statistics_collection=off"}

// citusInstalled checks that the server of binDir finds Citus' library and control file.
func citusInstalled(binDir string) error {
	libs, controls := citusPaths(binDir)
	for _, files := range [][]string{libs, controls} {
		if !anyFile(files) {
			return fmt.Errorf("%w for the PostgreSQL server in %s (no %s found): run scripts/install-citus.sh", ErrNoCitus, binDir, filepath.Base(files[0]))
		}
	}
	return nil
}

// citusPaths are where the server of binDir may look for Citus, derived from binDir as
// the server derives its lib and share dirs: beside bin/ (a source build; a Homebrew
// keg's lib/postgresql@N), or Debian's /usr/share/postgresql/N for
// /usr/lib/postgresql/N/bin.
func citusPaths(binDir string) (libs, controls []string) {
	prefix := filepath.Dir(binDir)
	base := filepath.Base(prefix)
	so := []string{"citus.so"}
	if runtime.GOOS == "darwin" { // PostgreSQL 16 and later load .dylib there
		so = append(so, "citus.dylib")
	}
	for _, sub := range []string{"", "postgresql", base} {
		for _, name := range so {
			libs = append(libs, filepath.Join(prefix, "lib", sub, name))
		}
		controls = append(controls, filepath.Join(prefix, "share", sub, "extension", "citus.control"))
	}
	usr := filepath.Dir(filepath.Dir(filepath.Dir(prefix)))
	controls = append(controls, filepath.Join(usr, "share", "postgresql", base, "extension", "citus.control"))
	return libs, controls
}

func anyFile(paths []string) bool {
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return true
		}
	}
	return false
}
