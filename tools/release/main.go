// Command release makes a cf-benchmark release the way the cf CLI installs plugins: the
// plugin built for every platform the cf CLI ships for, each carrying the program it
// pushes (cmd/cfbench, built for linux/amd64 with the same version), their SHA-256 and SHA-1
// checksums, and a plugin repository index, `list`, in the shape the community plugin
// repository serves and `cf add-plugin-repo`, `cf repo-plugins` and
// `cf install-plugin -r` read. Serve the output directory at -url, then:
//
//	cf add-plugin-repo cfbench URL && cf install-plugin -r cfbench cf-benchmark
//
// make release VERSION=1.2.0 RELEASE_URL=https://… runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/cli"
	"github.com/cf-benchmark/cf-benchmark/internal/version"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ver := fs.String("version", "", "the release's version, x.y.z (what cf plugins shows)")
	out := fs.String("out", "", "the directory to write the release into (default dist/VERSION)")
	url := fs.String("url", "", "the URL the directory will be served at: the index's binaries are URL/FILE")
	platforms := fs.String("platforms", strings.Join(allPlatforms(), ","), "the GOOS/GOARCH pairs to build, comma-separated")
	goCmd := fs.String("go", "go", "the go command")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: release -version x.y.z -url URL [-out DIR] [-platforms %s]\n\nExample:\n  go run ./tools/release -version 1.2.0 -url https://example.com/cf-benchmark/1.2.0\n\nOptions:\n", strings.Join(allPlatforms(), ","))
		fs.PrintDefaults()
	}
	if code, ok := cli.Parse(fs, args); !ok {
		return code
	}
	if maj, min, patch := version.Numbers(*ver); maj+min+patch == 0 || strings.HasPrefix(*ver, "v") {
		fmt.Fprintf(stderr, "release: -version %q: want x.y.z (not 0.0.0), as cf plugins shows it\n", *ver)
		return 2
	}
	if !strings.HasPrefix(*url, "http://") && !strings.HasPrefix(*url, "https://") {
		fmt.Fprintf(stderr, "release: -url %q: want the http(s) URL the release directory will be served at\n", *url)
		return 2
	}
	plats, err := parsePlatforms(*platforms)
	if err != nil {
		fmt.Fprintf(stderr, "release: -platforms: %v\n", err)
		return 2
	}
	if *out == "" {
		*out = "dist/" + *ver
	}
	r := Release{Version: *ver, URL: strings.TrimSuffix(*url, "/"), Dir: *out, Platforms: plats, Go: *goCmd, Date: time.Now().UTC()}
	if err := r.Make(ctx, stderr); err != nil {
		fmt.Fprintf(stderr, "release: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s: serve it at %s, then: cf add-plugin-repo cfbench %s && cf install-plugin -r cfbench cf-benchmark\n", r.Dir, r.URL, r.URL)
	return 0
}
