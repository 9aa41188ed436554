// Package payload is the program the plugin pushes to Cloud Foundry, cmd/cfbench built
// for linux/amd64, carried inside the plugin file gzip-compressed, and written out when
// a run needs it. make build puts it in data/ before it builds the plugin, so the plugin
// file alone can run a benchmark from macOS, Windows or Linux. A plugin built without it
// (go build ./plugin) carries nothing: Extract says so, and the caller looks for the
// program in a directory instead.
package payload

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

//go:embed data
var data embed.FS

// carried is the compressed program's path in data, and carriedVersion that of the
// version it was built as (internal/version), which make build writes beside it.
const (
	carried        = "data/cfbench.gz"
	carriedVersion = "data/version"
)

// Name is the program's file name, as it is pushed (its command is "./cfbench worker"
// and so on).
const Name = "cfbench"

// ErrNotCarried means this build of the plugin carries no program to push.
var ErrNotCarried = errors.New("this build of cf-benchmark carries no cfbench program to push (built without make build)")

// Version is the version the carried program was built as; "" when unknown.
func Version() string {
	b, _ := fs.ReadFile(data, carriedVersion)
	return strings.TrimSpace(string(b))
}

// Extract writes the carried program to a folder of dir named after its content, once,
// and returns its path. Concurrent callers, in this process or others, are safe: the
// file appears whole or not at all.
func Extract(dir string) (string, error) {
	return extract(data, dir)
}

func extract(fsys fs.FS, dir string) (string, error) {
	gz, err := fs.ReadFile(fsys, carried)
	if errors.Is(err, fs.ErrNotExist) {
		return "", ErrNotCarried
	}
	if err != nil {
		return "", fmt.Errorf("read the carried program: %w", err)
	}
	sum := sha256.Sum256(gz)
	folder := filepath.Join(dir, hex.EncodeToString(sum[:8]))
	path := filepath.Join(folder, Name)
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
		return path, nil
	}
	if err := os.MkdirAll(folder, 0o755); err != nil {
		return "", fmt.Errorf("write out the program to push: %w", err)
	}
	tmp, err := os.CreateTemp(folder, Name+".*")
	if err != nil {
		return "", fmt.Errorf("write out the program to push: %w", err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing to remove
	if err := unzip(tmp, gz); err != nil {
		tmp.Close()
		return "", fmt.Errorf("write out the program to push: %w", err)
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return "", fmt.Errorf("write out the program to push: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("write out the program to push: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		if _, statErr := os.Stat(path); statErr == nil {
			return path, nil // another caller's, the same bytes (Windows renames onto no existing file)
		}
		return "", fmt.Errorf("write out the program to push: %w", err)
	}
	return path, nil
}

// unzip writes the decompressed gz to w.
func unzip(w io.Writer, gz []byte) error {
	r, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return fmt.Errorf("the carried program is damaged: %w", err)
	}
	if _, err := io.Copy(w, r); err != nil {
		return fmt.Errorf("the carried program is damaged: %w", err)
	}
	return r.Close()
}
