package platform

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// Manifest is one app of a CF app manifest file, read and parsed once (LoadManifest):
// Resolve, Check and PushApp work from it without reading the file again. It is safe
// for concurrent use.
type Manifest struct {
	file string
	app  *manifestApp
	// src is where the app's files are: the manifest's path, resolved against the
	// manifest's directory (default: that directory).
	src string

	mu       sync.Mutex
	checked  bool  // the files were looked at (checkFiles)
	filesErr error // what checkFiles found
}

// LoadManifest reads the manifest file and picks app appName ("" = the manifest's only
// app; with several, an error names them). Its errors are a file that cannot be read
// and a *ManifestError naming file, app and field.
func LoadManifest(manifestPath, appName string) (*Manifest, error) {
	data, err := os.ReadFile(manifestPath)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	apps, err := parseManifest(manifestPath, data)
	if err != nil {
		return nil, err
	}
	a, err := pick(manifestPath, apps, appName)
	if err != nil {
		return nil, err
	}
	src := filepath.Dir(manifestPath)
	if a.Path != "" {
		src = a.Path
		if !filepath.IsAbs(src) {
			src = filepath.Join(filepath.Dir(manifestPath), src)
		}
	}
	return &Manifest{file: manifestPath, app: a, src: src}, nil
}

// Resolve returns the app as PushApp pushes it with o, without pushing: its name, the
// manifest applied, env, memory and instances. Its errors are PushApp's about the
// manifest itself (a *ManifestError naming file, app and field), and a route host that
// o's suffix makes too long.
func (m *Manifest) Resolve(o Overrides) (*ResolvedApp, error) { return m.app.resolve(m.file, o) }

// Check reports, without pushing, what PushApp with o would refuse in the manifest
// itself: a field it does not accept (a *ManifestError), app files that do not exist,
// a binary the command starts that is not linux/amd64 (ErrNotLinuxAmd64), or overrides
// that do not fit the app. Nil means the push can start; Cloud Foundry may still refuse
// it. The app's files, and the binary its command starts, are looked at once per
// Manifest.
func (m *Manifest) Check(o Overrides) error {
	if _, err := m.Resolve(o); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.checked {
		m.checked, m.filesErr = true, m.checkFiles()
	}
	return m.filesErr
}

// filesChecked says that Check found the app's files and the binary fine.
func (m *Manifest) filesChecked() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.checked && m.filesErr == nil
}

// checkFiles refuses app files that do not exist and a binary the command starts that
// is not linux/amd64.
func (m *Manifest) checkFiles() error {
	if _, err := os.Stat(m.src); err != nil {
		return fmt.Errorf("app %s: files: %w", m.app.Name, err)
	}
	if err := checkStarted(m.app, m.src); err != nil {
		return fmt.Errorf("app %s: %w", m.app.Name, err)
	}
	return nil
}

// checkStarted refuses a binary_buildpack app whose command starts a file of its own
// in src that is not a linux/amd64 executable (ErrNotLinuxAmd64).
func checkStarted(a *manifestApp, src string) error {
	if fi, err := os.Stat(src); err == nil && fi.IsDir() {
		if bin := a.binaryStarted(src); bin != "" {
			return checkBinary(bin)
		}
	}
	return nil
}
