// Package staging turns uploaded app bits into a runnable droplet for the local
// foundation, standing in for Cloud Foundry's buildpacks: it unpacks the package
// safely, picks the binary, Java, Node.js or Staticfile lifecycle (named or detected),
// prepares the app (npm install, executable bits, nginx configuration) and works out
// the start command.
//
// A droplet is a directory: DropletDir/app holds the app, to be run with
// `sh -c StartCommand` from there (see package cells).
package staging

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/cf-benchmark/cf-benchmark/internal/osproc"
)

// Buildpack names a Result can carry.
const (
	buildpackBinary = "binary_buildpack"
	buildpackJava   = "java_buildpack"
	buildpackNode   = "nodejs_buildpack"
	buildpackStatic = "staticfile_buildpack"
)

// ErrUnsupported marks an app no buildpack of the local foundation can stage, or a
// buildpack it does not have. Its message names what is supported.
var ErrUnsupported = errors.New("unsupported app: the local foundation stages " +
	"binary_buildpack (named in the manifest, or detected last by a Procfile with a web: line; runs the manifest's or the Procfile's command), " +
	"java_buildpack (named, or detected by exactly one executable *.jar at the top of the app or an exploded jar whose META-INF/MANIFEST.MF names a Main-Class), " +
	"nodejs_buildpack (named, or detected by package.json at the top of the app) and " +
	"staticfile_buildpack (named, or detected by a Staticfile at the top of the app; served with nginx)")

// ErrNotDetected marks an app that names no buildpack and that no lifecycle detects.
// It wraps ErrUnsupported.
var ErrNotDetected = fmt.Errorf("no buildpack detected the app: %w", ErrUnsupported)

// ErrNoStartCommand marks an app whose lifecycle cannot find anything to run.
var ErrNoStartCommand = errors.New("no start command")

// Request is one staging job.
type Request struct {
	PackageZip string            // path of the uploaded bits (a zip, as `cf push` / go-cfclient upload it)
	DropletDir string            // empty dir to create the droplet in; the app goes to DropletDir/app
	Buildpacks []string          // from the manifest/app lifecycle; empty = detect
	Command    string            // manifest/process command; "" = buildpack default
	MemoryMB   int               // the process memory limit (Java heap is derived from it)
	Env        map[string]string // app env (e.g. for npm)
	Log        io.Writer         // staging output, like `cf push` shows
	// User, if set, is whom the buildpack's commands run as (npm, and the install
	// scripts of the app and its dependencies), as a cell stages in a container: the
	// instances' user. They then run in a copy of the app in ScratchDir ("": the
	// system's temp dir), a dir User may enter, never in DropletDir.
	User       *osproc.Credential
	ScratchDir string
}

// BuildpackVersion is the version a droplet reports for the buildpack that staged it
// (CC's buildpacks[].version, which `cf app` shows): that of the local foundation's
// lifecycles, which stand in for Cloud Foundry's buildpacks and are not them.
const BuildpackVersion = "1.0.0"

// Result is a staged droplet.
type Result struct {
	Buildpack        string // "binary_buildpack", "java_buildpack", "nodejs_buildpack" or "staticfile_buildpack"
	BuildpackVersion string // BuildpackVersion
	StartCommand     string // what to run (with sh -c) in DropletDir/app
	// ProcessTypes are the app's other process types and their commands, from its
	// Procfile (as CF's buildpacks take them), such as worker or console.
	ProcessTypes map[string]string
}

// Stage unpacks req.PackageZip into req.DropletDir/app and prepares it with the named
// or detected buildpack, writing progress to req.Log. Errors wrap ErrUnsupported (no
// buildpack fits), ErrUnsafePackage (the zip tries to leave the app directory or is too
// big), ErrNoStartCommand or ErrMemoryTooSmall; a failed npm install is reported as
// such, its output in the log. Cancelling ctx kills npm. Stage may be called
// concurrently for different droplet directories.
func Stage(ctx context.Context, req Request) (Result, error) {
	log := req.Log
	if log == nil {
		log = io.Discard
	}
	if req.PackageZip == "" || req.DropletDir == "" {
		return Result{}, errors.New("staging needs a package zip and a droplet directory")
	}
	if err := os.MkdirAll(req.DropletDir, 0o755); err != nil {
		return Result{}, fmt.Errorf("create droplet directory: %w", err)
	}
	if entries, err := os.ReadDir(req.DropletDir); err != nil {
		return Result{}, fmt.Errorf("read droplet directory: %w", err)
	} else if len(entries) > 0 {
		return Result{}, fmt.Errorf("droplet directory %s is not empty", req.DropletDir)
	}
	appDir := filepath.Join(req.DropletDir, "app")
	if err := os.Mkdir(appDir, 0o755); err != nil {
		return Result{}, fmt.Errorf("create app directory: %w", err)
	}
	res, err := stage(ctx, req, appDir, log)
	if err != nil {
		// A failed droplet is not half usable; leave the directory empty as it came.
		if rerr := os.RemoveAll(appDir); rerr != nil {
			fmt.Fprintf(log, "       Could not clean up %s: %v\n", appDir, rerr)
		}
		fmt.Fprintf(log, "Staging failed: %v\n", err)
		return Result{}, err
	}
	return res, nil
}

func stage(ctx context.Context, req Request, appDir string, log io.Writer) (Result, error) {
	fmt.Fprintln(log, "-----> Extracting app package")
	st, err := extract(req.PackageZip, appDir, defaultLimits, log)
	if err != nil {
		return Result{}, err
	}
	size := formatSize(st.bytes)
	if st.bytes < 1024 {
		size = fmt.Sprintf("%dB", st.bytes)
	}
	fmt.Fprintf(log, "       %d files, %s\n", st.files, size)
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("staging cancelled: %w", err)
	}

	bp, err := chooseBuildpack(req.Buildpacks, appDir)
	if err != nil {
		return Result{}, err
	}
	types := procfile(appDir) // before a lifecycle moves the app's files
	var res Result
	switch bp {
	case buildpackBinary:
		res, err = stageBinary(req, appDir, log)
	case buildpackJava:
		res, err = stageJava(req, appDir, log)
	case buildpackNode:
		res, err = stageNode(ctx, req, appDir, log)
	case buildpackStatic:
		res, err = stageStaticfile(ctx, req, appDir, log)
	}
	if err != nil {
		return Result{}, err
	}
	// The app's files keep the modes their zip gave them. No buildpack makes a start
	// program executable (the binary buildpack runs the command as given), so a zip
	// whose program lacks the bit (one made on Windows by a tool other than the cf
	// CLI) fails to start here as on Cloud Foundry: "Permission denied", status 126.
	res.BuildpackVersion = BuildpackVersion
	for typ, cmd := range types {
		if typ != "web" {
			if res.ProcessTypes == nil {
				res.ProcessTypes = map[string]string{}
			}
			res.ProcessTypes[typ] = cmd
		}
	}
	fmt.Fprintf(log, "-----> Start command: %s\n", res.StartCommand)
	fmt.Fprintln(log, "Staging complete")
	return res, nil
}

// chooseBuildpack maps the manifest's buildpacks to a local one, or detects one in
// Cloud Foundry's default order (staticfile, java, nodejs). An app none of them
// detects but whose Procfile names a web command is staged as binary, last: on Cloud
// Foundry the buildpack of its language would detect it (a Ruby app's Gemfile, say)
// and run that command, which here runs with the machine's toolchain.
func chooseBuildpack(names []string, appDir string) (string, error) {
	var named []string
	for _, n := range names {
		if s := strings.TrimSpace(n); s != "" && s != "default" && s != "null" {
			named = append(named, s)
		}
	}
	switch len(named) {
	case 0:
		switch {
		case fileExists(filepath.Join(appDir, "Staticfile")):
			return buildpackStatic, nil
		case detectJava(appDir):
			return buildpackJava, nil
		case fileExists(filepath.Join(appDir, "package.json")):
			return buildpackNode, nil
		case procfileWeb(appDir) != "":
			return buildpackBinary, nil
		}
		return "", ErrNotDetected
	case 1:
		if bp, ok := canonicalBuildpack(named[0]); ok {
			return bp, nil
		}
		return "", fmt.Errorf("buildpack %q: %w", named[0], ErrUnsupported)
	}
	return "", fmt.Errorf("buildpacks %s: supply buildpacks (more than one buildpack) are not available: %w",
		strings.Join(named, ", "), ErrUnsupported)
}

// canonicalBuildpack accepts the system buildpack names, their _offline variants and
// git URLs of the Cloud Foundry buildpack repositories.
func canonicalBuildpack(name string) (string, bool) {
	n := strings.ToLower(name)
	if i := strings.IndexByte(n, '#'); i >= 0 {
		n = n[:i]
	}
	n = path.Base(strings.TrimSuffix(strings.TrimSuffix(n, "/"), ".git"))
	n = strings.TrimSuffix(strings.ReplaceAll(n, "-", "_"), "_offline")
	switch n {
	case buildpackBinary, buildpackJava, buildpackNode, buildpackStatic:
		return n, true
	}
	return "", false
}

func stageBinary(req Request, appDir string, log io.Writer) (Result, error) {
	fmt.Fprintln(log, "-----> Binary Buildpack (local foundation)")
	command := req.Command
	if command == "" {
		command = procfileWeb(appDir)
	}
	if command == "" {
		return Result{}, fmt.Errorf("binary_buildpack: %w: set command in the manifest (or a web: line in a Procfile)", ErrNoStartCommand)
	}
	return Result{Buildpack: buildpackBinary, StartCommand: command}, nil
}

// procfileWeb returns the web process of a Procfile at the top of the app, if any.
func procfileWeb(appDir string) string { return procfile(appDir)["web"] }

// procfile returns the process types and commands of a Procfile at the top of the
// app ("type: command" lines; others, such as a YAML document's "---", are skipped),
// nil without one.
func procfile(appDir string) map[string]string {
	f, err := os.Open(filepath.Join(appDir, "Procfile"))
	if err != nil {
		return nil
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if k = strings.TrimSpace(k); ok && k != "" && !strings.ContainsAny(k, " \t") && strings.TrimSpace(v) != "" {
			if _, dup := out[k]; !dup {
				out[k] = strings.TrimSpace(v)
			}
		}
	}
	return out
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// shellQuote quotes s for sh when it holds anything but safe characters.
func shellQuote(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=+,@%", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
