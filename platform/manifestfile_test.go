package platform

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadedManifestIsNotReadAgain: a Manifest resolves and checks from what
// LoadManifest read, also once the file is gone (the engine reads each manifest once,
// into its plan); checking its app's files looks at them once.
func TestLoadedManifestIsNotReadAgain(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "m.yml")
	if err := os.WriteFile(file, []byte("applications:\n- name: web\n  path: app\n  memory: 64M\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	m, err := LoadManifest(file, "")
	if err != nil {
		t.Fatal(err)
	}
	if m.filesChecked() {
		t.Fatal("files checked before Check")
	}
	if err := m.Check(Overrides{}); err != nil {
		t.Fatal(err)
	}
	if !m.filesChecked() {
		t.Fatal("files not checked after a Check that passed")
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	r, err := m.Resolve(Overrides{NameSuffix: "-2", Instances: 3})
	if err != nil || r.Name != "web-2" || r.MemoryMB != 64 || r.Instances != 3 {
		t.Fatalf("Resolve after the file went: %+v, %v", r, err)
	}
	if err := m.Check(Overrides{Memory: "128M"}); err != nil {
		t.Errorf("Check after the files went: %v, want the first look's answer", err)
	}
	if err := m.Check(Overrides{Memory: "lots"}); err == nil || !strings.Contains(err.Error(), "memory") {
		t.Errorf("Check of overrides that do not fit: %v, want the memory named", err)
	}
	if err := checkManifest(file, "", Overrides{}); err == nil || !strings.Contains(err.Error(), "read manifest: ") {
		t.Errorf("LoadManifest and Check of the file gone: %v, want it read again and missing", err)
	}
}

// checkManifest is LoadManifest then Check: what the engine's preflight does with each
// manifest of a spec.
func checkManifest(path, app string, o Overrides) error {
	m, err := LoadManifest(path, app)
	if err != nil {
		return err
	}
	return m.Check(o)
}

// resolveManifest is LoadManifest then Resolve.
func resolveManifest(path, app string, o Overrides) (*ResolvedApp, error) {
	m, err := LoadManifest(path, app)
	if err != nil {
		return nil, err
	}
	return m.Resolve(o)
}
