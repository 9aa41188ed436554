package platform

import (
	"archive/zip"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestZipMode(t *testing.T) {
	for _, c := range []struct {
		goos     string
		mode     fs.FileMode
		want     fs.FileMode
		whatFile string
	}{
		// Windows reports 0666 (0444 read-only) for files and 0777 for directories.
		{"windows", 0o666, 0o766, "a file"},
		{"windows", 0o444, 0o744, "a read-only file"},
		{"windows", fs.ModeSymlink | 0o666, fs.ModeSymlink | 0o766, "a link"},
		{"windows", fs.ModeDir | 0o777, fs.ModeDir | 0o755, "a directory"},
		{"linux", 0o644, 0o644, "a file"},
		{"linux", 0o755, 0o755, "an executable"},
		{"darwin", 0o600, 0o600, "a private file"},
		{"linux", fs.ModeDir | 0o700, fs.ModeDir | 0o755, "a directory"},
	} {
		if got := zipMode(c.goos, c.mode); got != c.want {
			t.Errorf("%s on %s: zipMode(%v) = %v, want %v", c.whatFile, c.goos, c.mode, got, c.want)
		}
	}
}

// zipModes lists a zip's entries and their modes.
func zipModes(t *testing.T, bits []byte) map[string]fs.FileMode {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(bits), int64(len(bits)))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]fs.FileMode{}
	for _, f := range zr.File {
		got[f.Name] = f.Mode()
	}
	return got
}

// An app directory pushed from Windows, where no file has an execute bit: every file
// goes up executable by its owner, as the cf CLI sends it, so `./start.sh` starts.
func TestAppBitsFromWindowsAreExecutable(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "start.sh", "#!/bin/sh\nexec ./server\n")
	writeFile(t, dir, "server", "\x7fELF")
	writeFile(t, dir, "conf/app.yml", "a: 1\n")
	for _, f := range []string{"start.sh", "server", "conf/app.yml"} {
		if err := os.Chmod(filepath.Join(dir, f), 0o644); err != nil { // as Windows reports a file
			t.Fatal(err)
		}
	}
	bits, err := appBitsFrom(dir, "windows")
	if err != nil {
		t.Fatal(err)
	}
	got := zipModes(t, bits)
	for name, mode := range got {
		if mode.IsDir() {
			if mode != fs.ModeDir|0o755 {
				t.Errorf("%s: mode %v, want drwxr-xr-x", name, mode)
			}
			continue
		}
		if mode.Perm()&0o700 != 0o700 {
			t.Errorf("%s: mode %v, want executable by its owner", name, mode)
		}
	}
	if len(got) != 4 {
		t.Errorf("zip has %v, want start.sh, server, conf/, conf/app.yml", got)
	}
	// The same directory from Linux keeps its modes: nothing there is executable.
	bits, err = appBitsFrom(dir, "linux")
	if err != nil {
		t.Fatal(err)
	}
	if m := zipModes(t, bits)["start.sh"]; m != 0o644 {
		t.Errorf("from linux start.sh: mode %v, want -rw-r--r--", m)
	}
}

// A .cfignore (written on Windows: CRLF) leaves out what it matches, as in the cf CLI,
// beside the names it always leaves out.
func TestAppBitsReadCFIgnore(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, ".cfignore", "# local only\r\n*.log\r\ntmp/\r\n/secrets.env\r\n")
	for _, f := range []string{"app.js", "debug.log", "logs/old.log", "tmp/x", "secrets.env", "lib/secrets.env", ".git/HEAD", "manifest.yml", "node_modules/a/index.js"} {
		writeFile(t, dir, f, "x")
	}
	bits, err := appBits(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range zipModes(t, bits) {
		names = append(names, n)
	}
	slices.Sort(names)
	// "tmp/" matches what is under tmp, not tmp itself: the cf CLI uploads it empty.
	want := []string{"app.js", "lib/", "lib/secrets.env", "logs/", "node_modules/", "node_modules/a/", "node_modules/a/index.js", "tmp/"}
	if !slices.Equal(names, want) {
		t.Errorf("zip holds %q, want %q", names, want)
	}
}

// A manifest saved on Windows (CRLF) whose app sits in a directory with spaces in its
// name resolves and checks as the same manifest with LF ends, and its app goes up.
func TestCRLFManifestWithSpacesInPath(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "my apps/web app/run.sh", "#!/bin/sh\n")
	lf := "applications:\n- name: web\n  path: my apps/web app\n  buildpacks: [binary_buildpack]\n  command: sh run.sh\n  memory: 64M\n  env: {GREETING: hello world}\n"
	for name, body := range map[string]string{"lf.yml": lf, "crlf.yml": strings.ReplaceAll(lf, "\n", "\r\n")} {
		m := writeFile(t, dir, name, body)
		if err := checkManifest(m, "", Overrides{}); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		r, err := resolveManifest(m, "", Overrides{})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if r.Name != "web" || r.MemoryMB != 64 || r.Env["GREETING"] != "hello world" || bytes.Contains(r.Manifest, []byte("\r")) {
			t.Errorf("%s resolved to %+v, manifest %q", name, r, r.Manifest)
		}
	}
	bits, err := appBits(filepath.Join(dir, "my apps", "web app"))
	if err != nil || len(zipModes(t, bits)) != 1 {
		t.Errorf("the app's bits: %v", err)
	}
}
