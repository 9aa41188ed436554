package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/wait"
	"github.com/cf-benchmark/cf-benchmark/platform"
	"github.com/cf-benchmark/cf-benchmark/report"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/resultsdb/export"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// Stage is one part of a session, in the order they run.
type Stage string

// The stages of a session. A stage that has nothing to do (deploy without a landscape,
// router logs without collectors.router_logs) is skipped and not reported.
const (
	StageDeploy     Stage = "deploy"      // the landscape on Cloud Foundry: Outcome.Access
	StageRun        Stage = "run"         // the ramp: Outcome.Result
	StageRouterLogs Stage = "router_logs" // Outcome.RouterLogs, Outcome.RouterLogsErr
	StageExport     Stage = "export"      // Outcome.ExportDir, Outcome.Export
	StageReport     Stage = "report"      // Outcome.Report, Outcome.ReportFile, Outcome.ReportErr
)

// SessionReporter is a Reporter that also hears when a stage of a session is done, to
// show what it produced. Calls come from the session's goroutine, one at a time.
type SessionReporter interface {
	Reporter
	// Done reports that stage finished; o holds what it and the stages before it
	// produced. It is called even when the stage failed in a way the session goes on
	// from (a failed check, router logs that could not be pulled).
	Done(stage Stage, o *Outcome)
}

// SessionConfig wires a session to its surroundings. A spec with a landscape runs on
// Cloud Foundry and needs CF, API and Pushed (see DeployConfig); its
// results database is found through the deployment. Otherwise Store is the results
// database and generators run in this process.
type SessionConfig struct {
	// Store and StoreName (how the user knows it, e.g. "the private Postgres in
	// .cfbench/pg") are the results database of a run without Cloud Foundry.
	Store     *resultsdb.Store
	StoreName string

	CF     *platform.CF
	API    string
	Pushed Pushed

	// LogSource opens the source of collectors.router_logs; nil skips router logs.
	LogSource LogSourceFunc
	// Reporter hears progress and stages; nil for none.
	Reporter SessionReporter
	Logger   *slog.Logger
	// LookupEnv gives the ${NAME}s of header values (default os.LookupEnv).
	LookupEnv func(string) (string, bool)
	// PollEvery is passed on to the run (see Options).
	PollEvery time.Duration
	// SpillDir holds the spill files of in-process generators (see Options); it is
	// created when missing.
	SpillDir string
	// Plan is Preflight's plan of the spec, when the caller made one before it had the
	// foundation (the run command does): RunSession then checks only what needs the
	// foundation (CF's quotas and chaos API), and the spec and its manifests are not
	// read again. Nil: RunSession makes it with Preflight.
	Plan *Plan
}

// Outcome is what a session produced, stage by stage; what a stage did not get to is
// zero.
type Outcome struct {
	// Access finds the results of a run on Cloud Foundry again; nil without.
	Access *Access
	// Store is the results database the run writes to (SessionConfig.Store, or on
	// Cloud Foundry the one the deploy reached); nil before the deploy stage there.
	Store *resultsdb.Store
	// Result is the run: its row, step summaries, stops and findings.
	Result
	// RouterLogs is the pull of the run's router logs, nil when none was made;
	// RouterLogsErr why it failed or stopped early. Neither fails the session: the
	// logs can be pulled again later.
	RouterLogs    *RouterLogPull
	RouterLogsErr error
	// ExportDir holds the CSV files Export lists.
	ExportDir string
	Export    *export.Manifest
	// Report is what the run means (package report), written as one offline HTML file
	// to ReportFile beside the CSV files; ReportErr says why not. A report that could
	// not be made does not fail the session: cf-benchmark report makes it again.
	Report     *report.Report
	ReportFile string
	ReportErr  error
}

// StageError is a stage that failed after the run was recorded: what the run collected
// is kept, and the stage can be done again by itself (e.g. cf-benchmark export).
type StageError struct {
	Stage Stage
	Err   error
}

func (e *StageError) Error() string { return fmt.Sprintf("%s: %v", e.Stage, e.Err) }
func (e *StageError) Unwrap() error { return e.Err }

// RunSession runs sp from start to end: Preflight, deploy (on Cloud Foundry), the run,
// a wait of collectors.router_logs.delay and the router log pull, and the CSV export
// into export.dir/RUN_ID. specText is stored with the run.
//
// The error is Preflight's (nothing started); a deploy error (wrapping ErrAborted when
// ctx ended); ErrAborted after an interrupted run, with the Outcome so far; or, with a
// complete Outcome, the run's error (ErrCheckFailed, …) joined with a *StageError for a
// failed export.
func RunSession(ctx context.Context, sp *spec.Spec, specText string, cfg SessionConfig) (*Outcome, error) {
	if cfg.LookupEnv == nil {
		cfg.LookupEnv = os.LookupEnv
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Reporter == nil {
		cfg.Reporter = discardReporter{}
	}
	var quotas QuotaReader
	if cfg.CF != nil {
		quotas = cfg.CF
	}
	plan := cfg.Plan
	switch {
	case plan == nil:
		var err error
		if plan, err = Preflight(ctx, sp, cfg.LookupEnv, quotas); err != nil {
			return nil, err
		}
	case plan.spec != sp:
		return nil, errors.New("session: the plan given is of another spec")
	default:
		if errs := plan.problems(ctx, cfg.LookupEnv, quotas, true); len(errs) > 0 {
			return nil, errs
		}
	}
	cfg.Reporter.Note(plan.String())
	for _, w := range tokenWarnings(sp, cfg.LookupEnv, plan.Duration, time.Now()) {
		cfg.Reporter.Note("warning: " + w)
	}
	s := &session{sp: sp, plan: plan, text: specText, cfg: cfg, store: cfg.Store, o: &Outcome{Store: cfg.Store}}
	defer s.close()
	// Adding a stage is a method here and a Stage constant.
	stages := []struct {
		stage Stage
		run   func(context.Context) (done bool, err error)
	}{
		{StageDeploy, s.deploy},
		{StageRun, s.run},
		{StageRouterLogs, s.routerLogs},
		{StageExport, s.export},
		{StageReport, s.report},
	}
	for _, st := range stages {
		done, err := st.run(ctx)
		if done {
			cfg.Reporter.Done(st.stage, s.o)
		}
		if err != nil {
			if s.o.Run == nil {
				return nil, err
			}
			return s.o, errors.Join(s.runErr, err)
		}
	}
	return s.o, s.runErr
}

// session is one RunSession in progress.
type session struct {
	sp    *spec.Spec
	plan  *Plan // Preflight's: the later stages read the spec's manifests from it
	text  string
	cfg   SessionConfig
	store *resultsdb.Store
	dep   *Deployment
	o     *Outcome
	// runErr is the run's own error, which the later stages go on from.
	runErr error
}

func (s *session) close() {
	if s.dep != nil {
		s.dep.Close()
	}
}

func (s *session) deploy(ctx context.Context) (bool, error) {
	if s.sp.Landscape == nil {
		kind, err := storeKind(ctx, s.store)
		if err != nil {
			return false, err
		}
		s.cfg.Reporter.Note("results db: " + s.cfg.StoreName + ", " + kind)
		return false, nil
	}
	dep, err := Deploy(ctx, s.plan, DeployConfig{CF: s.cfg.CF, API: s.cfg.API, Pushed: s.cfg.Pushed,
		Reporter: s.cfg.Reporter, Logger: s.cfg.Logger, LookupEnv: s.cfg.LookupEnv})
	if err != nil {
		if ctx.Err() != nil {
			return false, fmt.Errorf("%w before the run started: %v", ErrAborted, err)
		}
		return false, err
	}
	s.dep, s.store, s.o.Access, s.o.Store = dep, dep.Store, &dep.Access, dep.Store
	s.cfg.Reporter.Note("results db: " + s.sp.ResultsDB.ServiceInstance + " through the tunnel app " + dep.Access.TunnelApp + ", " + dep.storeKind)
	return true, nil
}

// storeKind checks that every node of the results database answers (a Citus cluster
// with a node away is refused before the run starts) and says what kind of store it is.
func storeKind(ctx context.Context, store *resultsdb.Store) (string, error) {
	if err := store.CheckNodes(ctx); err != nil {
		return "", fmt.Errorf("results database: %w", err)
	}
	topo, err := store.Topology(ctx)
	if err != nil {
		return "", fmt.Errorf("results database: %w", err)
	}
	return topo.String(), nil
}

func (s *session) run(ctx context.Context) (bool, error) {
	// Preflight has judged the spec: the run does not check it again (Run does).
	res, err := run(ctx, s.sp, s.text, Options{Store: s.store, Deployment: s.dep, Reporter: s.cfg.Reporter, Logger: s.cfg.Logger,
		LookupEnv: s.cfg.LookupEnv, PollEvery: s.cfg.PollEvery, SpillDir: s.cfg.SpillDir})
	if res == nil {
		return false, err
	}
	s.o.Result = *res
	if errors.Is(err, ErrAborted) {
		return true, err
	}
	s.runErr = err
	return true, nil
}

// routerLogs waits for the run's last router log lines to arrive, then pulls them. An
// interrupt during the wait skips the pull; the export still runs.
func (s *session) routerLogs(ctx context.Context) (bool, error) {
	rl := s.sp.Collectors.RouterLogs
	if rl != nil && rl.Source == spec.SourceDrain {
		if s.dep == nil {
			return false, nil
		}
		// The run's drain stored the lines as they came and waited for the last ones:
		// nothing to pull.
		s.o.RouterLogs, s.o.RouterLogsErr = DrainedRouterLogs(context.WithoutCancel(ctx), s.store, s.o.Run)
		if s.o.RouterLogs != nil {
			s.checkCollected(ctx)
		}
		return true, nil
	}
	if rl == nil || s.cfg.LogSource == nil {
		return false, nil
	}
	s.cfg.Reporter.Note(fmt.Sprintf("waiting %s for the run's last router log lines to arrive, then pulling them", rl.Delay))
	if !wait.For(ctx, rl.Delay) {
		return false, nil
	}
	s.o.RouterLogs, s.o.RouterLogsErr = PullRouterLogs(ctx, s.store, s.o.Run, rl, s.cfg.LogSource, s.cfg.Logger)
	if s.o.RouterLogs != nil {
		s.checkCollected(ctx)
	}
	return true, nil
}

// checkCollected judges what the router logs tell about the run's own measurement
// (coverage, layer order) and reports the findings like those of the steps.
func (s *session) checkCollected(ctx context.Context) {
	spent := false
	if c := s.o.RouterLogs.Collection; c != nil && c.Pull != nil {
		spent = c.Pull.BudgetExhausted
	}
	found, err := CheckCollected(context.WithoutCancel(ctx), s.store, s.o.Run.ID, s.sp.Checks, spent)
	if err != nil {
		s.cfg.Logger.Warn("judge the router logs", "err", err)
	}
	for _, f := range found {
		s.o.Findings = append(s.o.Findings, f)
		s.cfg.Reporter.Finding(f.Variant, f.Step, f.Finding)
	}
}

// export writes the run's CSV files, also after an interrupt during the router logs.
func (s *session) export(ctx context.Context) (bool, error) {
	dir := filepath.Join(s.sp.Export.Dir, s.o.Run.ID)
	m, err := export.Export(context.WithoutCancel(ctx), s.store, s.o.Run.ID, dir, s.sp.Export.Tables)
	if err != nil {
		return false, &StageError{Stage: StageExport, Err: err}
	}
	s.o.ExportDir, s.o.Export = dir, m
	return true, nil
}

// report builds the run's report and writes it as report.html beside the CSV files,
// also after an interrupt during the router logs.
func (s *session) report(ctx context.Context) (bool, error) {
	ctx = context.WithoutCancel(ctx)
	rep, err := report.Build(ctx, s.store, []string{s.o.Run.ID}, report.Options{})
	if err != nil {
		s.o.ReportErr = err
		return true, nil
	}
	s.o.Report = rep
	file := filepath.Join(s.sp.Export.Dir, s.o.Run.ID, "report.html")
	if err := writeFile(file, rep.WriteHTML); err != nil {
		s.o.ReportErr = err
		return true, nil
	}
	s.o.ReportFile = file
	return true, nil
}

// writeFile writes file with write, through a temporary file renamed into place, so a
// failed write leaves no half file behind.
func writeFile(file string, write func(io.Writer) error) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".report-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", file, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	return nil
}
