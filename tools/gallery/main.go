// Command gallery regenerates the docs' gallery from the reports that
// scripts/gallery.sh saved: for each gallery item (gallery.go), its chart as a PNG
// taken in headless Chromium and its table from the text form, placed in the page.
//
// Example (make gallery runs the specs first):
//
//	go run ./tools/gallery -runs docs/gallery/runs -out docs/gallery -page docs/gallery.md
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cf-benchmark/cf-benchmark/report/headless"
)

func main() {
	runs := flag.String("runs", "docs/gallery/runs", "directory of the reports' JSON forms (NAME.json)")
	out := flag.String("out", "docs/gallery", "directory the PNGs are written to")
	page := flag.String("page", "docs/gallery.md", "the page whose marked blocks are replaced")
	flag.Parse()
	if err := run(*runs, *out, *page); err != nil {
		fmt.Fprintln(os.Stderr, "gallery:", err)
		os.Exit(1)
	}
}

func run(runs, out, page string) error {
	md, err := os.ReadFile(page)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "cfbench-gallery-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bctx, stop, err := headless.Start(ctx, tmp)
	if err != nil {
		return err
	}
	defer stop()
	for _, it := range Items {
		file := filepath.Join(runs, it.Report+".json")
		if _, err := os.Stat(file); err != nil {
			fmt.Printf("%s: no saved report %s: left as it is (make gallery runs its spec)\n", it.Name, file)
			continue
		}
		rep, err := Load(file)
		if err != nil {
			return err
		}
		r, err := Render(bctx, rep, it, tmp)
		if err != nil {
			return err
		}
		if r.PNG != nil {
			if err := os.WriteFile(filepath.Join(out, it.Name+".png"), r.PNG, 0o644); err != nil {
				return err
			}
		}
		if md, err = Place(md, it.Name, Block(it, r)); err != nil {
			return err
		}
		fmt.Printf("%s: %s (%d bytes of PNG)\n", it.Name, it.Report, len(r.PNG))
	}
	return os.WriteFile(page, md, 0o644)
}
