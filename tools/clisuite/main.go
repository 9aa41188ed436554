// Command clisuite runs the real cf CLI's own integration suites (the selection
// of package clisuite) against a fresh local foundation it starts and stops, and prints
// specs passed / run per file, per suite and in total.
//
//	go run ./tools/clisuite [-quick] [-files routes,create_] [-procs 3] [-timeout 75m] [-json result.json] [-out DIR]
//
// scripts/cf-cli-suite.sh (make cf-cli-suite) runs it. Exit status: 0 when every spec
// run passed, 1 when some failed, 2 when the run itself could not happen.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/cf-benchmark/cf-benchmark/foundation"
	"github.com/cf-benchmark/cf-benchmark/foundation/clisuite"
)

func main() {
	quick := flag.Bool("quick", false, "run only the quick subset (the one `make test` runs)")
	files := flag.String("files", "", "run only the selection's files whose names begin with one of these comma-separated words")
	procs := flag.Int("procs", 3, "Ginkgo processes per suite")
	timeout := flag.Duration("timeout", 75*time.Minute, "bound on each suite's run")
	jsonOut := flag.String("json", "", "also write the summary as JSON to this file")
	outDir := flag.String("out", "", "dir for Ginkgo's output and reports (default: a new temp dir, kept)")
	dryRun := flag.Bool("dry-run", false, "list the selected specs (Ginkgo --dry-run) without a foundation")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code, err := run(ctx, *quick, *files, *procs, *timeout, *jsonOut, *outDir, *dryRun)
	if err != nil {
		fmt.Fprintln(os.Stderr, "clisuite:", err)
	}
	os.Exit(code)
}

func run(ctx context.Context, quick bool, files string, procs int, timeout time.Duration, jsonOut, outDir string, dryRun bool) (int, error) {
	root, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return 2, fmt.Errorf("find the repository: %w", err)
	}
	suites := clisuite.Selection
	if quick {
		suites = clisuite.Quick
	}
	if files != "" {
		if suites, err = clisuite.Only(suites, strings.Split(files, ",")); err != nil {
			return 2, err
		}
	}
	tools, err := clisuite.BuildTools(ctx, filepath.Dir(strings.TrimSpace(string(root))), os.Stderr, suites)
	if err != nil {
		return 2, err
	}
	if outDir == "" {
		if outDir, err = os.MkdirTemp("", "cf-cli-suite-"); err != nil {
			return 2, err
		}
	}
	o := clisuite.Options{Tools: tools, Suites: suites, Procs: procs, Timeout: timeout, OutDir: outDir,
		DryRun: dryRun, Progress: os.Stdout}
	if !dryRun {
		state, err := os.MkdirTemp("", "cf-cli-suite-foundation-")
		if err != nil {
			return 2, err
		}
		defer os.RemoveAll(state)
		os.Chmod(state, 0o755) // Postgres's unprivileged user enters it when run as root
		// 256M default app memory, as the cf CLI's CI configures its Cloud Controller and
		// its specs expect.
		f := foundation.New(foundation.Config{StateDir: state, StatsInterval: time.Second, StopGrace: 2 * time.Second, DefaultAppMemoryMB: 256, Throwaway: true})
		if err := f.Start(ctx); err != nil {
			return 2, fmt.Errorf("start the local foundation: %w", err)
		}
		defer f.Close()
		info := f.Info()
		o.Target = clisuite.Target{API: info.APIURL, User: info.User, Password: info.Password}
		fmt.Printf("local foundation at %s (state %s)\n", info.APIURL, state)
	}
	sum, err := clisuite.Run(ctx, o)
	sum.WriteText(os.Stdout)
	if err != nil {
		return 2, err
	}
	if jsonOut != "" {
		f, err := os.Create(jsonOut)
		if err != nil {
			return 2, err
		}
		defer f.Close()
		if err := sum.WriteJSON(f); err != nil {
			return 2, err
		}
	}
	if sum.Totals("").Failed > 0 {
		return 1, nil
	}
	return 0, nil
}
