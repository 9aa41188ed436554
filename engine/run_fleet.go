package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cf-benchmark/cf-benchmark/loadgen/worker"
	"github.com/cf-benchmark/cf-benchmark/platform"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// Fleet is the generator instances of one variant. The engine only asks for a number of
// instances; the instances themselves read the plan from the results database and join
// the run (package worker), so a fleet need not know about steps. Calls come from one
// goroutine.
type Fleet interface {
	// App is the generator app name the instances follow the plan as.
	App() string
	// Scale asks for n instances and returns once the request is accepted; the
	// instances join later.
	Scale(ctx context.Context, n int) error
	// Desired is the number of instances asked for now, which a user may have changed
	// by hand (cf scale) since the last Scale.
	Desired(ctx context.Context) (int, error)
	// Stop takes every instance down (gracefully: they store what they collected).
	Stop(ctx context.Context) error
}

// localFleet runs generator instances in this process, for url: variants without a
// Cloud Foundry. They follow the plan exactly as pushed generators do.
type localFleet struct {
	app       string
	store     *resultsdb.Store
	backend   func(i int) worker.Backend // nil: store
	poll      time.Duration
	log       *slog.Logger
	lookupEnv func(string) (string, bool)
	spillDir  string
	ctx       context.Context // instances live until it ends or Stop
	insts     []*worker.Worker
}

var _ Fleet = (*localFleet)(nil)

func (f *localFleet) App() string { return f.app }

func (f *localFleet) Scale(_ context.Context, n int) error {
	for len(f.insts) < n {
		var db worker.Backend = f.store
		if f.backend != nil {
			db = f.backend(len(f.insts))
		}
		in := worker.New(worker.Config{Store: db, App: f.app, Index: len(f.insts), Host: "127.0.0.1",
			PollEvery: f.poll, SpillDir: f.spillDir, Logger: f.log, LookupEnv: f.lookupEnv})
		if err := in.Start(f.ctx); err != nil {
			return err
		}
		f.insts = append(f.insts, in)
	}
	for len(f.insts) > n {
		last := f.insts[len(f.insts)-1]
		f.insts = f.insts[:len(f.insts)-1]
		if err := last.Close(); err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	return nil
}

func (f *localFleet) Desired(context.Context) (int, error) { return len(f.insts), nil }

func (f *localFleet) Stop(ctx context.Context) error { return f.Scale(ctx, 0) }

// cfFleet is a variant's generator app, scaled through the Cloud Controller.
type cfFleet struct {
	cf  *platform.CF
	app *platform.App
}

var _ Fleet = (*cfFleet)(nil)

func (f *cfFleet) App() string { return f.app.Name }

func (f *cfFleet) Scale(ctx context.Context, n int) error {
	return f.cf.Scale(ctx, f.app.ProcessGUID, n)
}

func (f *cfFleet) Desired(ctx context.Context) (int, error) {
	n, _, err := f.cf.Instances(ctx, f.app.ProcessGUID)
	return n, err
}

func (f *cfFleet) Stop(ctx context.Context) error {
	if err := f.cf.Scale(ctx, f.app.ProcessGUID, 0); err != nil {
		return errors.Join(err, fmt.Errorf("Try: cf scale %s -i 0", f.app.Name))
	}
	return nil
}
