package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// payloadDir is where the plugin finds what it carries (package payload); each release
// build gets its own through an overlay, whatever make build left there.
const payloadDir = "plugin/payload/data"

// Platform is a GOOS/GOARCH pair the plugin is built for.
type Platform struct{ OS, Arch string }

func (p Platform) String() string { return p.OS + "/" + p.Arch }

// file is the plugin binary's name for p.
func (p Platform) file() string {
	name := "cf-benchmark-" + p.OS + "-" + p.Arch
	if p.OS == "windows" {
		name += ".exe"
	}
	return name
}

// allPlatforms are those the cf CLI ships for.
func allPlatforms() []string {
	return []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "windows/amd64"}
}

func parsePlatforms(s string) ([]Platform, error) {
	var out []Platform
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if !slices.Contains(allPlatforms(), p) {
			return nil, fmt.Errorf("%q is not one of %s", p, strings.Join(allPlatforms(), ", "))
		}
		os, arch, _ := strings.Cut(p, "/")
		out = append(out, Platform{os, arch})
	}
	return out, nil
}

// cliPlatform is the name the cf CLI (v8: util/generic.GeneratePlatform) looks for in a
// repository's index on a machine of p: "osx" for every Mac, whatever its processor;
// none for linux/arm64, which the cf CLI installs from a file or URL only.
func cliPlatform(p Platform) string {
	switch p {
	case Platform{"linux", "amd64"}:
		return "linux64"
	case Platform{"windows", "amd64"}:
		return "win64"
	}
	if p.OS == "darwin" {
		return "osx"
	}
	return ""
}

// Release is one release's build.
type Release struct {
	Version   string
	URL       string // where Dir is served
	Dir       string
	Platforms []Platform
	Go        string
	Date      time.Time
}

// Make builds the plugin for every platform into r.Dir, the macOS universal binary when
// both Mac architectures are built, the checksums and the index.
func (r Release) Make(ctx context.Context, log io.Writer) error {
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		return err
	}
	overlay, err := r.payload(ctx, log)
	if overlay != "" {
		defer os.RemoveAll(filepath.Dir(overlay))
	}
	if err != nil {
		return err
	}
	files := map[string]string{} // cf CLI platform name: file
	var darwin []string
	var all []string
	for _, p := range r.Platforms {
		fmt.Fprintf(log, "release: building %s\n", p)
		cmd := exec.CommandContext(ctx, r.Go, "build", "-trimpath", "-overlay", overlay, "-ldflags", "-s -w -X main.version="+r.Version,
			"-o", filepath.Join(r.Dir, p.file()), "./plugin")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Arch)
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("build the plugin for %s: %w", p, err)
		}
		all = append(all, p.file())
		if p.OS == "darwin" {
			darwin = append(darwin, filepath.Join(r.Dir, p.file()))
		}
		if name := cliPlatform(p); name != "" {
			files[name] = p.file()
		}
	}
	if len(darwin) == 2 {
		const universal = "cf-benchmark-darwin-universal"
		if err := writeFat(filepath.Join(r.Dir, universal), darwin); err != nil {
			return fmt.Errorf("the macOS universal binary: %w", err)
		}
		all = append(all, universal)
		files["osx"] = universal // every Mac gets its own processor's code
	}
	sums := map[string]sums{}
	for _, f := range all {
		s, err := checksums(filepath.Join(r.Dir, f))
		if err != nil {
			return err
		}
		sums[f] = s
	}
	var sha256s, sha1s strings.Builder
	for _, f := range all {
		fmt.Fprintf(&sha256s, "%s  %s\n", sums[f].sha256, f)
		fmt.Fprintf(&sha1s, "%s  %s\n", sums[f].sha1, f)
	}
	if err := os.WriteFile(filepath.Join(r.Dir, "SHA256SUMS"), []byte(sha256s.String()), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(r.Dir, "SHA1SUMS"), []byte(sha1s.String()), 0o644); err != nil {
		return err
	}
	idx := Index{Plugins: []Plugin{r.plugin(files, sums)}}
	b, err := json.MarshalIndent(idx, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(r.Dir, "list"), append(b, '\n'), 0o644)
}

// payload builds the program every plugin of the release carries (cmd/cfbench for
// linux/amd64, stamped with the release's version), compressed, and returns a go build
// -overlay file that puts it and its version where package payload embeds them. The
// overlay's folder is the caller's to remove, also after an error.
func (r Release) payload(ctx context.Context, log io.Writer) (string, error) {
	tmp, err := os.MkdirTemp("", "cf-benchmark-release-")
	if err != nil {
		return "", err
	}
	overlay := filepath.Join(tmp, "overlay.json")
	bin := filepath.Join(tmp, "cfbench")
	fmt.Fprintf(log, "release: building the pushed program cfbench (linux/amd64)\n")
	cmd := exec.CommandContext(ctx, r.Go, "build", "-trimpath", "-ldflags", "-s -w -X main.version="+r.Version, "-o", bin, "./cmd/cfbench")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return overlay, fmt.Errorf("build cfbench: %w", err)
	}
	program, err := os.ReadFile(bin)
	if err != nil {
		return overlay, err
	}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if _, err := zw.Write(program); err != nil {
		return overlay, err
	}
	if err := zw.Close(); err != nil {
		return overlay, err
	}
	if err := os.WriteFile(bin+".gz", gz.Bytes(), 0o644); err != nil {
		return overlay, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "version"), []byte(r.Version+"\n"), 0o644); err != nil {
		return overlay, err
	}
	dir, err := filepath.Abs(payloadDir)
	if err != nil {
		return overlay, err
	}
	b, err := json.Marshal(map[string]map[string]string{"Replace": {
		filepath.Join(dir, "cfbench.gz"): bin + ".gz",
		filepath.Join(dir, "version"):    filepath.Join(tmp, "version"),
	}})
	if err != nil {
		return overlay, err
	}
	return overlay, os.WriteFile(overlay, b, 0o644)
}

type sums struct{ sha256, sha1 string }

func checksums(path string) (sums, error) {
	f, err := os.Open(path)
	if err != nil {
		return sums{}, err
	}
	defer f.Close()
	h256, h1 := sha256.New(), sha1.New()
	if _, err := io.Copy(io.MultiWriter(h256, h1), f); err != nil {
		return sums{}, fmt.Errorf("checksum %s: %w", path, err)
	}
	return sums{hex.EncodeToString(h256.Sum(nil)), hex.EncodeToString(h1.Sum(nil))}, nil
}

// Index is a plugin repository's `list`: what the community plugin repository serves
// (cloudfoundry/cli-plugin-repo) and the cf CLI reads (name, description, version,
// binaries; their checksum is SHA-1, which the cf CLI checks after downloading).
type Index struct {
	Plugins []Plugin `json:"plugins"`
}

// Plugin is one plugin's entry, with the community repository's fields.
type Plugin struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Version     string   `json:"version"`
	Created     string   `json:"created"`
	Updated     string   `json:"updated"`
	Company     string   `json:"company"`
	Authors     []Author `json:"authors"`
	Homepage    string   `json:"homepage"`
	Binaries    []Binary `json:"binaries"`
}

type Author struct {
	Name     string `json:"name"`
	Homepage string `json:"homepage"`
	Contact  string `json:"contact"`
}

type Binary struct {
	Platform string `json:"platform"`
	URL      string `json:"url"`
	Checksum string `json:"checksum"`
}

const homepage = "https://github.com/cf-benchmark/cf-benchmark"

func (r Release) plugin(files map[string]string, s map[string]sums) Plugin {
	p := Plugin{Name: "cf-benchmark", Version: r.Version,
		Description: "Benchmark apps on Cloud Foundry: push the apps and load generators to separate isolation segments, ramp the load with cf scale, " +
			"store every request, and report capacity at the SLO, throughput per CPU, the bottleneck layer and the confounders",
		Created: r.Date.Format(time.RFC3339), Updated: r.Date.Format(time.RFC3339), Company: "cf-benchmark",
		Authors:  []Author{{Name: "cf-benchmark", Homepage: homepage}},
		Homepage: homepage}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		p.Binaries = append(p.Binaries, Binary{Platform: n, URL: r.URL + "/" + files[n], Checksum: s[files[n]].sha1})
	}
	return p
}
