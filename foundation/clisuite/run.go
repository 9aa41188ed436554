package clisuite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Tools are the programs a run needs (scripts/build-cf-cli-suite.sh builds them).
type Tools struct {
	CF     string // the cf CLI
	Ginkgo string // the ginkgo v2 CLI
	Suites string // dir of SUITE/SUITE.test, the compiled suites
}

// Target is the foundation the specs drive, and its admin user.
type Target struct {
	API, User, Password string
}

// Options configure Run.
type Options struct {
	Tools  Tools
	Target Target
	Suites []Suite
	// Procs is the number of Ginkgo processes per suite (serial suites get one).
	Procs int
	// Timeout bounds each suite (Ginkgo's --timeout); a spec still running then fails.
	Timeout time.Duration
	// OutDir receives each suite's Ginkgo output (SUITE.log) and JSON report
	// (SUITE.json).
	OutDir string
	// DryRun lists the specs without running them (Ginkgo's --dry-run): no foundation
	// is needed, and every selected spec counts as passed or excluded.
	DryRun bool
	// Progress, when set, gets a line as each suite starts and ends.
	Progress io.Writer
}

// BuildTools runs scripts/build-cf-cli-suite.sh of the repository at root for the
// suites given (only what they need is compiled) and returns what it built.
func BuildTools(ctx context.Context, root string, stderr io.Writer, suites []Suite) (Tools, error) {
	var names []string
	for _, s := range suites {
		if !slices.Contains(names, s.Name) {
			names = append(names, s.Name)
		}
	}
	if len(names) == 0 {
		return Tools{}, errors.New("build the cf CLI suites: no suite selected")
	}
	cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", "build-cf-cli-suite.sh"), names...)
	cmd.Dir = root
	cmd.Stderr = stderr
	out, err := cmd.Output()
	if err != nil {
		return Tools{}, fmt.Errorf("build the cf CLI suites: %w", err)
	}
	var t Tools
	for _, line := range strings.Split(string(out), "\n") {
		k, v, _ := strings.Cut(line, "=")
		switch k {
		case "cf":
			t.CF = v
		case "ginkgo":
			t.Ginkgo = v
		case "suites":
			t.Suites = v
		}
	}
	if t.CF == "" || t.Ginkgo == "" || t.Suites == "" {
		return Tools{}, fmt.Errorf("build the cf CLI suites: unexpected output %q", out)
	}
	return t, nil
}

// Run runs the selected files of each suite against the target, with the specs of
// exclude.txt skipped, and counts the outcome. A failing spec is no error; an error is a
// run that could not happen or produced no report.
func Run(ctx context.Context, o Options) (Summary, error) {
	excl, err := Exclusions()
	if err != nil {
		return Summary{}, err
	}
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return Summary{}, err
	}
	var sum Summary
	for _, suite := range o.Suites {
		start := time.Now()
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "running %d files of the %s suite (output in %s)\n", len(suite.Files), suite.Name, filepath.Join(o.OutDir, suite.Name+".log"))
		}
		reports, err := runSuite(ctx, o, suite, excl)
		if err != nil {
			return sum, err
		}
		before := sum.Totals("")
		sum.add(suite, reports, excl)
		if o.Progress != nil {
			after := sum.Totals("")
			fmt.Fprintf(o.Progress, "%s: %d of %d passed, %d excluded, %d skipped (%s)\n", suite.Name,
				after.Passed-before.Passed, after.Run()-before.Run(), after.Excluded-before.Excluded,
				after.Skipped-before.Skipped, time.Since(start).Round(time.Second))
		}
	}
	return sum, nil
}

func runSuite(ctx context.Context, o Options, suite Suite, excl []Exclusion) ([]suiteReport, error) {
	procs := max(o.Procs, 1)
	if suite.Serial || o.DryRun { // Ginkgo dry-runs only in series
		procs = 1
	}
	report := filepath.Join(o.OutDir, suite.Name+".json")
	args := []string{"--no-color", "--procs", strconv.Itoa(procs), "--json-report", report}
	if o.Timeout > 0 {
		args = append(args, "--timeout", o.Timeout.String())
	}
	if o.DryRun {
		args = append(args, "--dry-run")
	}
	for _, f := range suite.Files {
		args = append(args, "--focus-file", "/"+suite.Name+"/"+regexp.QuoteMeta(f)+"$")
	}
	for _, e := range excl {
		args = append(args, "--skip", e.Pattern.String())
	}
	args = append(args, filepath.Join(o.Tools.Suites, suite.Name, suite.Name+".test"))

	log, err := os.Create(filepath.Join(o.OutDir, suite.Name+".log"))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	os.Remove(report)
	cmd := exec.CommandContext(ctx, o.Tools.Ginkgo, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(os.Environ(),
		"PATH="+filepath.Dir(o.Tools.CF)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"CF_INT_API="+o.Target.API, "CF_INT_USERNAME="+o.Target.User, "CF_INT_PASSWORD="+o.Target.Password,
		"SKIP_SSL_VALIDATION=true", "CF_COLOR=false")
	// Ginkgo's parallel processes are its children: end them with it.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 30 * time.Second
	runErr := cmd.Run()
	reports, err := readReport(report)
	if err != nil {
		// Failing specs make ginkgo exit 1; only a missing report means the run broke.
		return nil, fmt.Errorf("%s suite: %w (ginkgo: %v; see %s)", suite.Name, err, runErr, log.Name())
	}
	if ctx.Err() != nil {
		return reports, fmt.Errorf("%s suite: %w", suite.Name, ctx.Err())
	}
	return reports, nil
}
