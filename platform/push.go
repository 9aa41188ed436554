package platform

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/cloudfoundry/go-cfclient/v3/client"
	"github.com/cloudfoundry/go-cfclient/v3/resource"
	gitignore "github.com/sabhiram/go-gitignore"
	"gopkg.in/yaml.v3"

	"github.com/cf-benchmark/cf-benchmark/internal/bytesize"
)

// App is a pushed app and its web process.
type App struct {
	Name, GUID, ProcessGUID string
	// Instances is the web process's desired instance count.
	Instances int
}

// PushApp pushes m's app (LoadManifest: cf CLI manifest v1: name, path, memory,
// disk_quota, instances, buildpacks, command, env, routes, no-route, random-route,
// health-check-type, stack, services, processes) into org/space, changed by o (see
// Overrides and Manifest.Resolve). path is resolved against the manifest's directory
// (default: that directory); a directory is zipped as the cf CLI zips it (appBits: its
// .cfignore and the names it always leaves out, file modes as it sets them), and a zip
// file (.zip, .jar, .war) is uploaded as is. Manifest services are bound: they must
// exist in the space. Without routes, no-route or random-route the app gets its default
// route, as with cf push.
//
// It returns once the app is staged and started: its instances may not run yet (see
// WaitRunning). A manifest that cannot be pushed with o is a *ManifestError naming
// file, app and field; nothing is pushed then. Nor is a binary_buildpack app whose
// command starts a file of its own ("./x") that is not a linux/amd64 executable
// (ErrNotLinuxAmd64); that is checked here unless m.Check passed already.
func (c *CF) PushApp(ctx context.Context, org, space string, m *Manifest, o Overrides) (*App, error) {
	r, err := m.Resolve(o)
	if err != nil {
		return nil, err
	}
	if !m.filesChecked() {
		if err := checkStarted(m.app, m.src); err != nil {
			return nil, fmt.Errorf("push %s: %w", r.Name, err)
		}
	}
	bits, err := appBits(m.src)
	if err != nil {
		return nil, fmt.Errorf("push %s: %w", r.Name, err)
	}
	return c.push(ctx, org, space, r.Name, r.Manifest, m.app.Services, bits)
}

// BinaryApp is an app pushed from one executable with the binary buildpack.
type BinaryApp struct {
	Org, Space, Name string
	// Binary is the path of a linux/amd64 executable.
	Binary string
	// Command starts the app; default "./" + the binary's file name.
	Command string
	// Memory and Disk are CF sizes (256M, 1G); "" = the foundation's default.
	Memory, Disk string
	// Instances is the web process's instance count; 0 pushes and stages the app with
	// no instance running (generators wait so until a run scales them).
	Instances int
	Env       map[string]string
	// RouteHost is the host of the app's route on the org's default domain; "" = no
	// route.
	RouteHost string
	// HealthCheck is "process" or "port"; "" = port with a route, process without.
	HealthCheck string
	// Services are service instance names in the space to bind.
	Services []string
}

// PushBinary pushes b as PushApp pushes a manifest's app, and returns when it is
// staged and started. The binary must be an ELF x86-64 executable: it is checked
// before anything is pushed.
func (c *CF) PushBinary(ctx context.Context, b BinaryApp) (*App, error) {
	if b.Org == "" || b.Space == "" || b.Name == "" || b.Binary == "" {
		return nil, fmt.Errorf("push binary app %q: org, space, name and binary must be given", b.Name)
	}
	if err := checkBinary(b.Binary); err != nil {
		return nil, fmt.Errorf("push %s: %w", b.Name, err)
	}
	base := filepath.Base(b.Binary)
	app := map[string]any{"name": b.Name, "buildpacks": []string{"binary_buildpack"}, "command": "./" + base, "instances": b.Instances}
	if b.Command != "" {
		app["command"] = b.Command
	}
	for key, size := range map[string]string{"memory": b.Memory, "disk_quota": b.Disk} {
		if size == "" {
			continue
		}
		if _, err := bytesize.Megabytes(size); err != nil {
			return nil, fmt.Errorf("push %s: %s: %w", b.Name, key, err)
		}
		app[key] = size
	}
	if b.Instances < 0 {
		return nil, fmt.Errorf("push %s: instances %d: want at least 0", b.Name, b.Instances)
	}
	if len(b.Env) > 0 {
		app["env"] = b.Env
	}
	switch b.HealthCheck {
	case "":
		app["health-check-type"] = "port"
		if b.RouteHost == "" {
			app["health-check-type"] = "process"
		}
	case "process", "port":
		app["health-check-type"] = b.HealthCheck
	default:
		return nil, fmt.Errorf("push %s: health check %q: want process or port", b.Name, b.HealthCheck)
	}
	if len(b.Services) > 0 {
		app["services"] = b.Services
	}
	if b.RouteHost == "" {
		app["no-route"] = true
	} else {
		route, err := c.defaultRoute(ctx, b.Org, b.RouteHost)
		if err != nil {
			return nil, fmt.Errorf("push %s: %w", b.Name, err)
		}
		app["routes"] = []map[string]string{{"route": route}}
	}
	body, err := yaml.Marshal(map[string]any{"applications": []any{app}})
	if err != nil {
		return nil, fmt.Errorf("push %s: %w", b.Name, err)
	}
	bin, err := os.ReadFile(b.Binary)
	if err != nil {
		return nil, fmt.Errorf("push %s: %w", b.Name, err)
	}
	bits, err := c.binaryBits(base, bin)
	if err != nil {
		return nil, fmt.Errorf("push %s: %w", b.Name, err)
	}
	return c.push(ctx, b.Org, b.Space, b.Name, body, b.Services, bits)
}

// binaryKey names a binary app's package: the binary's name and content.
type binaryKey struct {
	name string
	sum  [sha256.Size]byte
}

// binaryBits is the package of a binary app, the binary named base alone in a zip,
// zipped once per name and content: a run pushes one program as its tunnel and as
// each variant's generators, and deflating its megabytes was most of a push's CPU.
func (c *CF) binaryBits(base string, bin []byte) ([]byte, error) {
	key := binaryKey{name: base, sum: sha256.Sum256(bin)}
	c.zipMu.Lock()
	defer c.zipMu.Unlock()
	if bits, ok := c.zips[key]; ok {
		return bits, nil
	}
	bits, err := zipFiles(zipEntry{name: base, mode: 0o755, body: bin})
	if err != nil {
		return nil, err
	}
	if c.zips == nil {
		c.zips = map[binaryKey][]byte{}
	}
	c.zips[key] = bits
	return bits, nil
}

// defaultRoute is host on org's default domain.
func (c *CF) defaultRoute(ctx context.Context, org, host string) (string, error) {
	orgGUID, err := c.org(ctx, org)
	if err != nil {
		return "", err
	}
	d, err := c.cl.Organizations.GetDefaultDomain(ctx, orgGUID)
	if err != nil {
		return "", fmt.Errorf("read the default domain of org %s (Try: cf domains): %w", org, err)
	}
	return host + "." + d.Name, nil
}

// ErrNotLinuxAmd64 marks a binary that cannot run on a CF cell.
var ErrNotLinuxAmd64 = errors.New("not a linux/amd64 executable")

// checkBinary makes sure path is an ELF x86-64 executable, which cells run. Its error
// says what the file is instead and how to build the right one.
func checkBinary(path string) error {
	const fix = "cells run linux/amd64: build it with GOOS=linux GOARCH=amd64 CGO_ENABLED=0 go build (make build does)"
	f, err := elf.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err != nil {
		return fmt.Errorf("%s is %w but %s: %s", path, ErrNotLinuxAmd64, fileKind(path), fix)
	}
	defer f.Close()
	if f.Class != elf.ELFCLASS64 || f.Machine != elf.EM_X86_64 || (f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN) {
		return fmt.Errorf("%s is %w (ELF %s %s %s): %s", path, ErrNotLinuxAmd64, f.Class, f.Machine, f.Type, fix)
	}
	return nil
}

// fileKind names what a file that is not ELF looks like, from its first bytes.
func fileKind(path string) string {
	var head [4]byte
	f, err := os.Open(path)
	if err != nil {
		return "unreadable"
	}
	defer f.Close()
	n, _ := io.ReadFull(f, head[:])
	b := head[:n]
	switch {
	case bytes.HasPrefix(b, []byte("#!")):
		return "a script"
	case bytes.HasPrefix(b, []byte("MZ")):
		return "a Windows executable"
	case bytes.Equal(b, []byte{0xcf, 0xfa, 0xed, 0xfe}), bytes.Equal(b, []byte{0xce, 0xfa, 0xed, 0xfe}),
		bytes.Equal(b, []byte{0xca, 0xfe, 0xba, 0xbe}):
		return "a macOS (Mach-O) executable"
	case bytes.HasPrefix(b, []byte("\x7fELF")):
		return "a damaged ELF file"
	}
	return "not an executable"
}

// binaryStarted returns the file in dir that a binary_buildpack app's command starts
// ("./x …"), if there is one and it is not a script; "" otherwise. Such an app runs
// only if that file is a linux/amd64 executable.
func (a *manifestApp) binaryStarted(dir string) string {
	var buildpacks []string
	switch v := a.raw["buildpacks"].(type) {
	case []any:
		for _, b := range v {
			if s, ok := b.(string); ok {
				buildpacks = append(buildpacks, s)
			}
		}
	}
	if s, ok := a.raw["buildpack"].(string); ok {
		buildpacks = append(buildpacks, s)
	}
	cmd, _ := a.raw["command"].(string)
	fields := strings.Fields(cmd)
	if !slices.Contains(buildpacks, "binary_buildpack") || len(fields) == 0 || !strings.HasPrefix(fields[0], "./") {
		return ""
	}
	name := path.Clean(fields[0])
	if strings.HasPrefix(name, "..") {
		return ""
	}
	p := filepath.Join(dir, filepath.FromSlash(name))
	if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() || fileKind(p) == "a script" {
		return ""
	}
	return p
}

// ignoredAlways are the cf CLI's ignore lines for every push, before a .cfignore's.
var ignoredAlways = []string{".cfignore", ".DS_Store", ".git", ".gitignore", ".hg", ".svn", "_darcs", "manifest.yaml", "manifest.yml"}

// appBits is what a push uploads from src: a directory zipped, or a zip file as is.
func appBits(src string) ([]byte, error) { return appBitsFrom(src, runtime.GOOS) }

// appBitsFrom is appBits as the cf CLI on goos does it. A directory's files are
// matched as the cf CLI matches them (gitignore patterns: ignoredAlways and the
// directory's .cfignore, CRLF lines too), get modes as it gives them (zipMode), and a
// symlink is stored as a link with its target in slashes.
func appBitsFrom(src, goos string) ([]byte, error) {
	fi, err := os.Stat(src)
	if err != nil {
		return nil, fmt.Errorf("app path: %w", err)
	}
	if !fi.IsDir() {
		b, err := os.ReadFile(src)
		if err != nil {
			return nil, fmt.Errorf("app path: %w", err)
		}
		if _, err := zip.NewReader(bytes.NewReader(b), int64(len(b))); err != nil {
			return nil, fmt.Errorf("app path %s is neither a directory nor a zip archive (.zip, .jar, .war)", src)
		}
		return b, nil
	}
	ignore, err := cfIgnore(src)
	if err != nil {
		return nil, err
	}
	var entries []zipEntry
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == src {
			return nil
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if ignore.MatchesPath(rel) {
			return nil // as the cf CLI: a directory's files are matched one by one
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		e := zipEntry{name: filepath.ToSlash(rel), mode: zipMode(goos, info.Mode())}
		switch {
		case d.IsDir():
			e.name += "/"
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			e.body = []byte(filepath.ToSlash(target))
		case info.Mode().IsRegular():
			if e.body, err = os.ReadFile(p); err != nil {
				return err
			}
		default:
			return nil // sockets, devices: nothing an app needs
		}
		entries = append(entries, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("zip %s: %w", src, err)
	}
	if !slices.ContainsFunc(entries, func(e zipEntry) bool { return !strings.HasSuffix(e.name, "/") }) {
		return nil, fmt.Errorf("app path %s has no files to push", src)
	}
	return zipFiles(entries...)
}

// cfIgnore is the matcher of what a push of dir leaves out: ignoredAlways and, as the
// cf CLI reads it, dir's .cfignore.
func cfIgnore(dir string) (*gitignore.GitIgnore, error) {
	f := filepath.Join(dir, ".cfignore")
	if _, err := os.Stat(f); err != nil {
		return gitignore.CompileIgnoreLines(ignoredAlways...)
	}
	g, err := gitignore.CompileIgnoreFileAndLines(f, ignoredAlways...)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", f, err)
	}
	return g, nil
}

type zipEntry struct {
	name string // slash-separated; a directory ends in /
	mode fs.FileMode
	body []byte // a symlink's target
}

func zipFiles(entries ...zipEntry) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		h := &zip.FileHeader{Name: path.Clean(e.name), Method: zip.Deflate}
		if strings.HasSuffix(e.name, "/") {
			h.Name += "/"
			h.Method = zip.Store
		}
		h.SetMode(e.mode)
		w, err := zw.CreateHeader(h)
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(e.body); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// push applies an app's manifest (body, one app named name) to the space, uploads
// bits, stages them and starts (or restarts) the app, as the cf CLI's push does.
func (c *CF) push(ctx context.Context, org, space, name string, body []byte, services []string, bits []byte) (*App, error) {
	_, spaceGUID, err := c.space(ctx, org, space)
	if err != nil {
		return nil, fmt.Errorf("push %s: %w", name, err)
	}
	for _, s := range services {
		if _, err := c.instance(ctx, spaceGUID, s); err != nil {
			return nil, fmt.Errorf("push %s: bind %s: %w", name, s, err)
		}
	}
	job, err := c.cl.Manifests.ApplyManifest(ctx, spaceGUID, string(body))
	if err != nil {
		return nil, fmt.Errorf("push %s: apply manifest: %w", name, err)
	}
	if err := c.waitJob(ctx, job); err != nil {
		return nil, fmt.Errorf("push %s: apply manifest: %w", name, err)
	}
	app, err := c.cl.Applications.Single(ctx, appsNamed(spaceGUID, name))
	if err != nil {
		return nil, fmt.Errorf("push %s: find the app the manifest made: %w", name, err)
	}
	pkg, err := c.cl.Packages.Create(ctx, resource.NewPackageCreate(app.GUID))
	if err != nil {
		return nil, fmt.Errorf("push %s: create package: %w", name, err)
	}
	if _, err := c.cl.Packages.Upload(ctx, pkg.GUID, bytes.NewReader(bits)); err != nil {
		return nil, fmt.Errorf("push %s: upload %d bytes: %w", name, len(bits), err)
	}
	err = poll(ctx, func() (bool, error) {
		p, err := c.cl.Packages.Get(ctx, pkg.GUID)
		if err != nil {
			return false, err
		}
		switch p.State {
		case resource.PackageStateReady:
			return true, nil
		case resource.PackageStateFailed, resource.PackageStateExpired:
			return false, fmt.Errorf("package %s", p.State)
		}
		return false, nil
	})
	if err != nil {
		return nil, fmt.Errorf("push %s: process the upload: %w", name, err)
	}
	build, err := c.cl.Builds.Create(ctx, resource.NewBuildCreate(pkg.GUID))
	if err != nil {
		return nil, fmt.Errorf("push %s: stage: %w", name, err)
	}
	var droplet string
	err = poll(ctx, func() (bool, error) {
		b, err := c.cl.Builds.Get(ctx, build.GUID)
		if err != nil {
			return false, err
		}
		switch b.State {
		case resource.BuildStateStaged:
			if b.Droplet == nil || b.Droplet.GUID == "" {
				return false, errors.New("staged without a droplet")
			}
			droplet = b.Droplet.GUID
			return true, nil
		case resource.BuildStateFailed:
			msg := "staging failed"
			if b.Error != nil {
				msg = *b.Error
			}
			return false, fmt.Errorf("%s. Try: cf logs %s --recent", msg, name)
		}
		return false, nil
	})
	if err != nil {
		return nil, fmt.Errorf("push %s: stage: %w", name, err)
	}
	if _, err := c.cl.Droplets.SetCurrentAssociationForApp(ctx, app.GUID, droplet); err != nil {
		return nil, fmt.Errorf("push %s: set droplet: %w", name, err)
	}
	if app.State == "STARTED" {
		_, err = c.cl.Applications.Restart(ctx, app.GUID)
	} else {
		_, err = c.cl.Applications.Start(ctx, app.GUID)
	}
	if err != nil {
		return nil, fmt.Errorf("push %s: start: %w. Try: cf logs %s --recent", name, err, name)
	}
	out, err := c.appOf(ctx, app)
	if err != nil {
		return nil, fmt.Errorf("push %s: %w", name, err)
	}
	return out, nil
}

// FindApp returns the app name in the space, or nil (and no error) when there is none.
func (c *CF) FindApp(ctx context.Context, spaceGUID, name string) (*App, error) {
	apps, err := c.cl.Applications.ListAll(ctx, appsNamed(spaceGUID, name))
	if err != nil {
		return nil, fmt.Errorf("look up app %s: %w", name, err)
	}
	if len(apps) == 0 {
		return nil, nil
	}
	return c.appOf(ctx, apps[0])
}

func appsNamed(spaceGUID, name string) *client.AppListOptions {
	o := client.NewAppListOptions()
	o.Names.EqualTo(name)
	o.SpaceGUIDs.EqualTo(spaceGUID)
	return o
}

// appOf adds the web process to an app.
func (c *CF) appOf(ctx context.Context, a *resource.App) (*App, error) {
	opts := client.NewProcessOptions()
	opts.Types.EqualTo("web")
	procs, err := c.cl.Processes.ListForAppAll(ctx, a.GUID, opts)
	if err != nil {
		return nil, fmt.Errorf("read the web process of %s: %w", a.Name, err)
	}
	if len(procs) == 0 {
		return nil, fmt.Errorf("app %s has no web process", a.Name)
	}
	return &App{Name: a.Name, GUID: a.GUID, ProcessGUID: procs[0].GUID, Instances: procs[0].Instances}, nil
}
