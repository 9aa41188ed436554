package foundation

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cf-benchmark/cf-benchmark/internal/freeport"
	"github.com/cf-benchmark/cf-benchmark/internal/osproc"
)

// The state directory holds the admin password and the token-signing secret
// (foundation.json), the API's state with service credentials (cc/), the droplets and
// the logs. App instances run as other users (each its own; staging as InstanceUser) and
// must reach none of it:
// the directory is 0711, which lets the services' Postgres, running as its own user,
// through to its data in pg/ (pgserver keeps that closed to others), and everything
// else in it is its owner's alone (0700 directories, 0600 files). Instances work in
// copies of their droplets outside it (package cells).

// InstanceUser is the user apps are staged as when the foundation runs as root (each
// instance then runs as a user of its own, see package cells); cells creates it if it
// does not exist.
const InstanceUser = "cfbench-app"

// stateDirMode lets other users through the state directory, not read it.
const stateDirMode = 0o711

// openEntries are the state directory's entries that other users may enter.
var openEntries = map[string]bool{"pg": true}

// closeStateDir creates dir and closes it and its entries to other users, including
// those an earlier version left open.
func closeStateDir(dir string) error {
	if err := os.MkdirAll(dir, stateDirMode); err != nil {
		return fmt.Errorf("create state dir: %w", err)
	}
	if err := os.Chmod(dir, stateDirMode); err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	for _, e := range entries {
		if openEntries[e.Name()] || e.Type()&os.ModeSymlink != 0 {
			continue
		}
		mode := os.FileMode(0o600)
		if e.IsDir() {
			mode = 0o700
		}
		if err := os.Chmod(filepath.Join(dir, e.Name()), mode); err != nil {
			return fmt.Errorf("state dir: %w", err)
		}
	}
	return nil
}

// privateDir creates dir (if need be) for its owner alone.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.Chmod(dir, 0o700)
}

func lockFile(dir string) string { return filepath.Join(dir, "foundation.lock") }

// lockStateDir takes the state directory's lock, held while a foundation runs from it
// (the kernel drops it when the process dies, however it dies). A foundation that holds
// it already is a *RunningError.
func lockStateDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(lockFile(dir), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock the state dir: %w", err)
	}
	if err := osproc.LockFile(f); err != nil {
		f.Close()
		if errors.Is(err, osproc.ErrLocked) {
			pid, _ := Running(dir) // 0 while the other one starts up
			return nil, &RunningError{Dir: dir, PID: pid}
		}
		return nil, fmt.Errorf("lock the state dir: %w", err)
	}
	return f, nil
}

// unlockStateDir gives the state directory's lock back at once, so that a start
// right after (a retry) may take it, and closes lock.
func unlockStateDir(lock *os.File) error {
	err := osproc.UnlockFile(lock)
	return errors.Join(err, lock.Close())
}

// pidToken is what the pid file holds: the pid and the process's start time, so that
// a pid file left by a killed foundation never makes Stop signal the unrelated process
// that got its pid since.
func pidToken(pid int, start uint64) string {
	return strconv.Itoa(pid) + " " + strconv.FormatUint(start, 10) + "\n"
}

// parsePIDFile reads "PID START" (START absent in pid files of earlier versions).
func parsePIDFile(b []byte) (pid int, start uint64, hasStart bool, err error) {
	f := strings.Fields(string(b))
	if len(f) == 0 || len(f) > 2 {
		return 0, 0, false, errors.New("pid file: want PID START")
	}
	if pid, err = strconv.Atoi(f[0]); err != nil || pid <= 0 {
		return 0, 0, false, fmt.Errorf("pid file: bad pid %q", f[0])
	}
	if len(f) == 2 {
		if start, err = strconv.ParseUint(f[1], 10, 64); err != nil {
			return 0, 0, false, fmt.Errorf("pid file: bad start time %q", f[1])
		}
		return pid, start, true, nil
	}
	return pid, 0, false, nil
}

// freshDir makes dir anew for this process's user, dropping what a killed run left in
// it; it refuses a dir that someone else made meanwhile (it lives in the shared temp
// dir).
func freshDir(dir string) (string, error) {
	if err := os.RemoveAll(dir); err != nil {
		return "", fmt.Errorf("remove the instance dirs a killed run left: %w", err)
	}
	if err := os.Mkdir(dir, 0o711); err != nil {
		return "", fmt.Errorf("instance dirs: %w", err)
	}
	return dir, nil
}

// loadSettings reads the settings, or chooses them (free ports, a password, a secret)
// and saves them on first start.
func loadSettings(path string) (Settings, error) {
	var s Settings
	b, err := os.ReadFile(path)
	if err == nil {
		if err := json.Unmarshal(b, &s); err != nil {
			return s, fmt.Errorf("%s is damaged: %w", path, err)
		}
		return s, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return s, err
	}
	s = Settings{User: "admin", Password: randomHex(12), Secret: randomHex(32), AppsDomain: "apps.localhost"}
	for _, p := range []*int{&s.APIPort, &s.RouterPort, &s.PostgresPort} {
		if *p, err = freeport.Loopback(); err != nil {
			return s, err
		}
	}
	b, _ = json.MarshalIndent(s, "", "  ")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return s, fmt.Errorf("save foundation settings: %w", err)
	}
	return s, nil
}

func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:4])
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
