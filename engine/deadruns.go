package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cf-benchmark/cf-benchmark/platform"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// errTakenForDead is why a run ends when another process marked it aborted: it did not
// heartbeat for resultsdb.RunStaleAfter (the results database was away that long).
var errTakenForDead = errors.New("marked aborted by another cf-benchmark while this run could not reach the results database to heartbeat")

// heartbeat marks run id alive every resultsdb.RunHeartbeatEvery until stop is called
// or ctx ends. When the run is found no longer running (another process took it for
// dead), it cancels the run with errTakenForDead as the cause. stop waits for it.
func heartbeat(ctx context.Context, cancel context.CancelCauseFunc, store *resultsdb.Store, id string, log *slog.Logger) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(resultsdb.RunHeartbeatEvery)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			bctx, c := context.WithTimeout(ctx, 2*resultsdb.RunHeartbeatEvery)
			err := store.HeartbeatRun(bctx, id)
			c()
			switch {
			case errors.Is(err, resultsdb.ErrRunNotRunning):
				cancel(errTakenForDead)
				return
			case err != nil && ctx.Err() == nil:
				log.Warn("heartbeat of the run", "err", err)
			}
		}
	}()
	return func() { close(quit); <-done }
}

// ScaleDown scales a generator app of a dead run to 0 instances; an app that is gone
// is no error.
type ScaleDown func(ctx context.Context, app string) error

// ScaleDownIn scales generator apps down in the space spaceGUID through the Cloud
// Controller.
func ScaleDownIn(cf *platform.CF, spaceGUID string) ScaleDown {
	return func(ctx context.Context, name string) error { return cf.ScaleDown(ctx, spaceGUID, name) }
}

// cleaner scales the generators of dead runs down in the deployment's generator space;
// nil without a deployment (in-process generators die with their run's process).
func (d *Deployment) cleaner() ScaleDown {
	if d == nil {
		return nil
	}
	return ScaleDownIn(d.cf, d.Access.SpaceGUID)
}

// AbortDeadRuns marks aborted the runs whose process died (resultsdb.AbortDeadRuns),
// says so through note, and scales their generator apps to 0 with scaleDown (nil:
// none are pushed, or they cannot be reached from here), except those a live run of
// the same spec uses now. Their tunnel app is the
// spec's (TunnelApp), which the next run of the spec pushes again with new
// credentials: it is reused, not left behind. Failures are logged: they must not keep
// status or a new run from going on.
func AbortDeadRuns(ctx context.Context, store *resultsdb.Store, scaleDown ScaleDown, note func(string), log *slog.Logger) {
	dead, err := store.AbortDeadRuns(ctx, 0)
	if err != nil {
		log.Warn("look for runs whose process died", "err", err)
		return
	}
	for _, d := range dead {
		msg := fmt.Sprintf("run %s marked aborted: its process stopped (last heartbeat %s)", d.ID, d.LastHeartbeat.Local().Format(time.DateTime))
		if scaleDown != nil {
			for _, app := range d.GeneratorApps {
				if err := scaleDown(ctx, app); err != nil {
					msg += fmt.Sprintf("; scaling its generators %s to 0 failed: %v", app, err)
					continue
				}
				msg += fmt.Sprintf("; its generators %s scaled to 0", app)
			}
		}
		for _, app := range d.InUse {
			msg += fmt.Sprintf("; its generators %s left alone: a live run uses them", app)
		}
		note(msg)
	}
}
