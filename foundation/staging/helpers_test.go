package staging

import (
	"archive/zip"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// entry is one file of a test zip.
type entry struct {
	name string
	body string
	mode fs.FileMode // 0 with noModes, else Unix mode (fs.ModeSymlink for links, body = target)
}

// writeZip writes entries to a zip in a temp dir. With noModes the entries carry no
// Unix modes, as zips made by some Windows tools.
func writeZip(t *testing.T, noModes bool, entries ...entry) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "package.zip")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		if !noModes {
			h.SetMode(e.mode)
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(w, e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// zipDir zips a directory the way `cf push` uploads one: relative names, Unix modes.
func zipDir(t *testing.T, dir string) string {
	t.Helper()
	var entries []entry
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			entries = append(entries, entry{name: filepath.ToSlash(rel) + "/", mode: fi.Mode()})
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			entries = append(entries, entry{name: filepath.ToSlash(rel), body: target, mode: fi.Mode()})
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			entries = append(entries, entry{name: filepath.ToSlash(rel), body: string(b), mode: fi.Mode()})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return writeZip(t, false, entries...)
}

// copyDir copies testdata into a temp dir.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// dropletDir is an empty droplet directory inside its own sandbox, so tests can check
// nothing was written beside it.
func dropletDir(t *testing.T) (sandbox, droplet string) {
	t.Helper()
	sandbox = t.TempDir()
	return sandbox, filepath.Join(sandbox, "droplet")
}
