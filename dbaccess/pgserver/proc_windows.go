package pgserver

import (
	"errors"
	"os"
	"syscall"

	"github.com/cf-benchmark/cf-benchmark/internal/osproc"
)

// errWindows is what Start and Attach return on Windows.
var errWindows error = windowsError{}

// windowsError says what to do instead of a private server; it is an
// errors.ErrUnsupported.
type windowsError struct{}

func (windowsError) Error() string {
	return "a private PostgreSQL server is started on Linux and macOS only (it is stopped with Unix signals): on Windows give a results database with --db postgres://… or $CFBENCH_DB"
}

func (windowsError) Unwrap() error { return errors.ErrUnsupported }

// credential is unused on Windows: the server never runs as another user here.
type credential = osproc.Credential

func supported() error { return errWindows }

// alive reports whether process pid exists.
func alive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}

func signal(int, syscall.Signal) error          { return errWindows }
func procAttr(*credential) *syscall.SysProcAttr { return nil }
func serverAttr(*credential, bool) *syscall.SysProcAttr {
	return nil
}
func runAs(string) (*credential, error)    { return nil, nil }
func traversable(string, *credential) bool { return true }

// fileUID: Windows files have no Unix owner.
func fileUID(os.FileInfo) (int, bool) { return 0, false }
