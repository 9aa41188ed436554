package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs"
	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/drain"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// LogWindowSlack widens a run's window for its router logs: clocks of routers and of
// the machine that started the run differ, and a log line's time may be when the
// request ended.
const LogWindowSlack = time.Minute

// LogCollection is what a pull of a run's router logs did and left in the store.
type LogCollection struct {
	// Pull is the pull's state in the store, counters over every attempt.
	Pull *resultsdb.LogPull
	// Result is this attempt's.
	Result routerlogs.Result
	// Resumed tells that an earlier, interrupted pull was continued.
	Resumed bool
}

// CollectRouterLogs pulls the router requests of run from src (named source, e.g.
// "elasticsearch:https://logs.example.com/logs-app-*") into the store and joins them
// to the samples by trace id. It resumes where an earlier pull of the same source
// stopped, so an interrupted pull never stores a request twice nor spends the document
// budget twice; budget.MaxDocuments counts over all attempts. Entries without a trace
// id of this run (other clients, other runs) are counted, not stored.
func CollectRouterLogs(ctx context.Context, store *resultsdb.Store, run *resultsdb.Run, source string, src routerlogs.Source,
	budget routerlogs.Budget, log *slog.Logger) (*LogCollection, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	pull, err := store.LogPull(ctx, run.ID, source)
	if err != nil {
		return nil, err
	}
	lc := &LogCollection{Pull: pull, Resumed: pull != nil}
	var from routerlogs.Cursor
	if pull == nil {
		pull = &resultsdb.LogPull{RunID: run.ID, Source: source, Cursor: json.RawMessage(`{}`)}
		lc.Pull = pull
	} else if err := json.Unmarshal(pull.Cursor, &from); err != nil {
		return nil, fmt.Errorf("router log cursor of run %s: %w", run.ID, err)
	}
	if budget.MaxDocuments > 0 {
		left := budget.MaxDocuments - pull.Retrieved
		if left <= 0 {
			pull.BudgetExhausted = true
			return lc, store.StoreRouterBatch(ctx, pull, nil)
		}
		budget.MaxDocuments = left
	}
	q, err := logQuery(ctx, store, run)
	if err != nil {
		return nil, err
	}
	emit := func(b routerlogs.Batch) error {
		rows := make([]resultsdb.RouterRequest, 0, len(b.Entries))
		for i := range b.Entries {
			if r, ok := routerRequest(&b.Entries[i], run.TraceTag); ok {
				rows = append(rows, r)
			} else {
				pull.Foreign++
			}
		}
		next, err := json.Marshal(b.Next)
		if err != nil {
			return err
		}
		pull.Cursor = next
		pull.Retrieved += int64(len(b.Entries) + b.Unparseable)
		pull.Unparseable += int64(b.Unparseable)
		return store.StoreRouterBatch(ctx, pull, rows)
	}
	lc.Result, err = src.Pull(ctx, q, from, budget, emit)
	if err != nil {
		return lc, fmt.Errorf("pull router logs of run %s from %s: %w", run.ID, source, err)
	}
	if lc.Result.BudgetExhausted {
		pull.BudgetExhausted = true
		if err := store.StoreRouterBatch(ctx, pull, nil); err != nil {
			return lc, err
		}
	}
	log.Info("router logs pulled", "run", run.ID, "source", source, "retrieved", lc.Result.Retrieved,
		"requests", lc.Result.Requests, "retries", lc.Result.Retries, "throttled", lc.Result.Throttled)
	return lc, store.FinishLogPull(ctx, run.ID, source)
}

// logQuery is the window and apps of a run: from its start to its end (or now), widened
// by LogWindowSlack, for the apps its variants pushed (every app when a variant only
// had a url: the trace ids then tell the run's requests).
func logQuery(ctx context.Context, store *resultsdb.Store, run *resultsdb.Run) (routerlogs.Query, error) {
	vs, err := store.RunVariants(ctx, run.ID)
	if err != nil {
		return routerlogs.Query{}, err
	}
	end := time.Now()
	if run.Ended != nil {
		end = *run.Ended
	}
	q := routerlogs.Query{From: run.Started.Add(-LogWindowSlack), To: end.Add(LogWindowSlack)}
	for _, v := range vs {
		if v.AppName == "" {
			return routerlogs.Query{From: q.From, To: q.To}, nil
		}
		q.Apps = append(q.Apps, v.AppName, v.AppGUID)
	}
	return q, nil
}

// routerRequest converts an entry carrying a trace id of the run tagged tag.
func routerRequest(e *routerlogs.Entry, tag uint32) (resultsdb.RouterRequest, bool) {
	return routerlogs.RouterRequest(&e.Record, e.AppGUID, e.App, tag)
}

// LogSourceFunc opens the router log source a spec's collectors.router_logs names, for a
// run whose pushed apps are apps (GUID to name). It returns the source and its name for
// the pull's record (e.g. "file:/abs/access.log"). The caller wires one per source kind.
type LogSourceFunc func(rl *spec.RouterLogs, apps map[string]string) (routerlogs.Source, string, error)

// RouterLogPull is a pull of a run's router logs and the coverage per step it left.
type RouterLogPull struct {
	// Source names where the logs came from.
	Source     string
	Collection *LogCollection
	// Coverage is per variant and step: requests sent, found in the router logs.
	Coverage []resultsdb.Coverage
}

// FromDrain reports whether the lines came from the run's drain as they arrived (no
// pull: counters of what the drain stored).
func (p *RouterLogPull) FromDrain() bool { return p.Source == drain.Source }

// PullRouterLogs opens the run's router log source with open and pulls it into the store
// (CollectRouterLogs), then computes and stores the coverage and latency decomposition
// per step (resultsdb.Store.ComputeRouterMetrics). When the pull fails part-way it returns
// what it got together with the error; a nil pull means nothing was pulled.
func PullRouterLogs(ctx context.Context, store *resultsdb.Store, run *resultsdb.Run, rl *spec.RouterLogs, open LogSourceFunc, log *slog.Logger) (*RouterLogPull, error) {
	vs, err := store.RunVariants(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	apps := map[string]string{}
	for _, v := range vs {
		if v.AppGUID != "" {
			apps[v.AppGUID] = v.AppName
		}
	}
	src, name, err := open(rl, apps)
	if err != nil {
		return nil, fmt.Errorf("router logs: %w", err)
	}
	budget := routerlogs.Budget{MaxDocuments: int64(rl.MaxDocuments), MaxRequestsPerSecond: rl.MaxRequestsPerSecond}
	lc, err := CollectRouterLogs(ctx, store, run, name, src, budget, log)
	if lc == nil {
		return nil, err
	}
	// What the report needs of the router lines (coverage, the latency decomposition)
	// is computed once, now that they are stored.
	ms, cerr := store.ComputeRouterMetrics(context.WithoutCancel(ctx), run.ID)
	if cerr != nil {
		return nil, errors.Join(err, cerr)
	}
	cov := resultsdb.Coverages(ms)
	return &RouterLogPull{Source: name, Collection: lc, Coverage: cov}, err
}

// DrainedRouterLogs is the router logs of a run whose drain stored them as they came
// (collectors.router_logs.source drain): it computes and stores the coverage and
// latency decomposition per step from them (resultsdb.Store.ComputeRouterMetrics).
// Nothing is pulled; a run whose drain stored nothing gives nil.
func DrainedRouterLogs(ctx context.Context, store *resultsdb.Store, run *resultsdb.Run) (*RouterLogPull, error) {
	pull, err := store.LogPull(ctx, run.ID, drain.Source)
	if err != nil || pull == nil {
		return nil, err
	}
	ms, err := store.ComputeRouterMetrics(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	return &RouterLogPull{Source: drain.Source, Collection: &LogCollection{Pull: pull}, Coverage: resultsdb.Coverages(ms)}, nil
}
