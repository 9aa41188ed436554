package pgserver

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/cf-benchmark/cf-benchmark/internal/fstree"
)

// A Fast cluster is a copy of a template cluster that initdb made once per server major
// version and server user, instead of an initdb of its own: initdb's bootstrap took
// about 1.3 CPU-s a cluster, and make test makes about 45 of them. The copies share
// the template's superuser password (kept beside it, private to its owner), which is
// fine for throwaway clusters that listen on 127.0.0.1 only (the tests' servers, a
// throwaway foundation's services: foundation.Config.Throwaway), and not for a results
// store: a cluster without Fast always gets an initdb and a password of its own.

// templateDir is where the template of major lives for cred's user (nil: this process's).
func templateDir(major string, cred *credential) string {
	uid := os.Geteuid()
	if cred != nil {
		uid = int(cred.Uid)
	}
	return filepath.Join(os.TempDir(), "cf-benchmark-pg-template", major+"-"+strconv.Itoa(uid))
}

// template returns the data dir and superuser password of the template cluster of
// major, making it first if there is none. Processes that race to make it each run
// initdb into a directory of their own, and the first rename wins.
func (s *Server) template(ctx context.Context, binDir, major string, cred *credential) (data, password string, err error) {
	dir := templateDir(major, cred)
	data, pwPath := filepath.Join(dir, "data"), filepath.Join(dir, "password")
	if pw, err := readTemplate(dir, pwPath); err == nil {
		return data, pw, nil
	}
	root := filepath.Dir(dir)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", "", err
	}
	if err := ownedByUs(root); err != nil {
		return "", "", err
	}
	tmp, err := os.MkdirTemp(root, ".new-")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(tmp)
	// Enterable by the server's user, who owns the cluster; the password is root's.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", "", err
	}
	pw, err := loadOrCreatePassword(filepath.Join(tmp, "password"))
	if err != nil {
		return "", "", err
	}
	if err := runInitdb(ctx, binDir, filepath.Join(tmp, "data"), pw, cred); err != nil {
		return "", "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another process made it meanwhile: use theirs.
		if pw, rerr := readTemplate(dir, pwPath); rerr == nil {
			return data, pw, nil
		}
		return "", "", fmt.Errorf("keep postgres template cluster: %w", err)
	}
	return data, pw, nil
}

// readTemplate returns the template's password once its cluster is complete.
func readTemplate(dir, pwPath string) (string, error) {
	if err := ownedByUs(dir); err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "PG_VERSION")); err != nil {
		return "", err
	}
	b, err := os.ReadFile(pwPath)
	if err != nil {
		return "", err
	}
	return string(bytes.TrimSpace(b)), nil
}

// ownedByUs refuses a directory another user made: the template shapes every Fast
// cluster, and the temp dir is shared.
func ownedByUs(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if uid, ok := fileUID(fi); ok && uid != os.Geteuid() {
		return fmt.Errorf("%s belongs to another user (uid %d)", dir, uid)
	}
	return nil
}

// copyCluster copies the template's data dir to dst (which must not exist) and gives the
// copy to cred's user.
func copyCluster(src, dst string, cred *credential) error {
	if err := fstree.Copy(src, dst, cred); err != nil {
		os.RemoveAll(dst)
		return fmt.Errorf("copy postgres template cluster: %w", err)
	}
	return nil
}
