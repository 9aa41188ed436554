package staging

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const link = fs.ModeSymlink | 0o777

// assertContained fails if anything exists in sandbox besides the droplet, or if any
// link under the droplet resolves outside it.
func assertContained(t *testing.T, sandbox, droplet string) {
	t.Helper()
	entries, err := os.ReadDir(sandbox)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != filepath.Base(droplet) {
			t.Errorf("extraction wrote %s outside the droplet", e.Name())
		}
	}
	root, err := filepath.EvalSymlinks(droplet)
	if err != nil {
		return // nothing extracted
	}
	_ = filepath.WalkDir(droplet, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		if r, err := filepath.EvalSymlinks(p); err == nil {
			if rel, err := filepath.Rel(root, r); err != nil || !filepath.IsLocal(rel) {
				t.Errorf("link %s resolves to %s, outside the droplet", p, r)
			}
		}
		return nil
	})
}

func TestMaliciousPackagesAreRejected(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		entries []entry
		unsafe  bool // must wrap ErrUnsafePackage (else any error will do)
	}{
		{"parent path", []entry{{name: "../evil", body: "x", mode: 0o644}}, true},
		{"absolute path", []entry{{name: "/tmp/evil", body: "x", mode: 0o644}}, true},
		{"parent after dir", []entry{{name: "a/../../evil", body: "x", mode: 0o644}}, true},
		{"backslashes", []entry{{name: `a\..\..\evil`, body: "x", mode: 0o644}}, true},
		{"link to absolute path", []entry{{name: "passwd", body: "/etc/passwd", mode: link}}, true},
		{"link to parent", []entry{{name: "up", body: "../..", mode: link}}, true},
		{"link from subdir to parent", []entry{{name: "a/b/up", body: "../../../x", mode: link}}, true},
		{"chained links", []entry{{name: "d/s1", body: "..", mode: link}, {name: "s2", body: "d/s1/../..", mode: link}}, true},
		{"link below a link", []entry{{name: "sub/", mode: fs.ModeDir | 0o755}, {name: "x", body: "sub", mode: link}, {name: "x/y", body: "z", mode: link}}, true},
		{"file then link over its dir", []entry{{name: "x/evil", body: "x", mode: 0o644}, {name: "x", body: ".", mode: link}}, false},
		{"empty link", []entry{{name: "l", body: "", mode: link}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sandbox, droplet := dropletDir(t)
			_, err := Stage(context.Background(), Request{PackageZip: writeZip(t, false, tc.entries...), DropletDir: droplet,
				Buildpacks: []string{"binary_buildpack"}, Command: "./app"})
			if err == nil || tc.unsafe && !errors.Is(err, ErrUnsafePackage) {
				t.Errorf("err = %v, want an unsafe package error", err)
			}
			assertContained(t, sandbox, droplet)
		})
	}
}

func TestExtractLimits(t *testing.T) {
	t.Parallel()
	many := make([]entry, 11)
	for i := range many {
		many[i] = entry{name: strings.Repeat("f", i+1), mode: 0o644}
	}
	lim := limits{entries: 10, bytes: 1000}
	for _, tc := range []struct {
		name    string
		entries []entry
	}{
		{"too many entries", many},
		{"too many bytes", []entry{{name: "a", body: strings.Repeat("x", 600), mode: 0o644}, {name: "b", body: strings.Repeat("x", 600), mode: 0o644}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := extract(writeZip(t, false, tc.entries...), t.TempDir(), lim, io.Discard)
			if !errors.Is(err, ErrUnsafePackage) {
				t.Errorf("err = %v, want ErrUnsafePackage", err)
			}
		})
	}
	if _, err := extract(writeZip(t, false, many[:10]...), t.TempDir(), lim, io.Discard); err != nil {
		t.Errorf("within limits: %v", err)
	}
}

func TestExtractKeepsLinksInside(t *testing.T) {
	t.Parallel()
	dest := t.TempDir()
	var log strings.Builder
	_, err := extract(writeZip(t, false,
		entry{name: "lib/real.txt", body: "real", mode: 0o644},
		entry{name: "bin/tool", body: "../lib/real.txt", mode: link},
		entry{name: "node_modules/.bin/gone", body: "../missing/cli.js", mode: link},
		entry{name: "./", mode: fs.ModeDir | 0o755},
	), dest, defaultLimits, &log)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dest, "bin", "tool")); err != nil || string(b) != "real" {
		t.Errorf("bin/tool = %q, %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(dest, "node_modules", ".bin", "gone")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("dangling link kept: %v", err)
	}
	if !strings.Contains(log.String(), "Dropping dangling symlink node_modules/.bin/gone") {
		t.Errorf("log = %q", log.String())
	}
}

// FuzzExtract feeds entry names and link targets to the extractor: whatever it
// accepts or rejects, nothing may land or point outside the droplet.
func FuzzExtract(f *testing.F) {
	f.Add("a/b.txt", "c", "a/b.txt")
	f.Add("../x", "l", "/etc")
	f.Add("d/s1", "s2", "d/s1/../..")
	f.Add("x", "x/y", "..")
	f.Fuzz(func(t *testing.T, file, linkName, target string) {
		if strings.HasSuffix(file, "/") || strings.HasSuffix(linkName, "/") {
			t.Skip("zip entries named like directories carry no body")
		}
		sandbox := t.TempDir()
		dest := filepath.Join(sandbox, "droplet")
		if err := os.Mkdir(dest, 0o755); err != nil {
			t.Fatal(err)
		}
		zip := writeZip(t, false, entry{name: file, body: "x", mode: 0o644}, entry{name: linkName, body: target, mode: link})
		_, _ = extract(zip, dest, defaultLimits, io.Discard)
		assertContained(t, sandbox, dest)
		os.Remove(zip)
	})
}
