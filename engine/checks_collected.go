package engine

import (
	"context"
	"time"

	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// CheckCollected judges what exists only once a run's router logs are collected: each
// step's router-log coverage and the order of its layers (client, router, app). It
// records the findings as run events, replacing those of an earlier call for the run
// (the logs may be pulled again), and returns them in step order. budgetSpent tells
// that the pull stopped at its document budget.
func CheckCollected(ctx context.Context, store *resultsdb.Store, runID string, checks spec.Checks, budgetSpent bool) ([]StepFinding, error) {
	ms, err := store.RouterMetrics(ctx, runID)
	if err != nil {
		return nil, err
	}
	covs := resultsdb.Coverages(ms)
	orders, err := store.LayerOrders(ctx, runID)
	if err != nil {
		return nil, err
	}
	var found []StepFinding
	for _, c := range covs {
		if f := CheckCoverage(checks.Coverage, c, budgetSpent); f != nil {
			found = append(found, StepFinding{Variant: c.Variant, Step: c.Step, Finding: *f})
		}
	}
	for _, o := range orders {
		if f := CheckLayerOrder(checks.LayerOrder, o); f != nil {
			found = append(found, StepFinding{Variant: o.Variant, Step: o.Step, Finding: *f})
		}
	}
	if err := store.DeleteFindings(ctx, runID, CoverageCheck, LayerOrderCheck); err != nil {
		return nil, err
	}
	for _, f := range found {
		ev := resultsdb.Event{RunID: runID, At: time.Now(), Variant: f.Variant, Step: f.Step, Kind: "check", Level: string(f.Level),
			Message: f.Message, Check: f.Check, Evidence: f.Evidence}
		if err := store.AddEvent(ctx, ev); err != nil {
			return found, err
		}
	}
	return found, nil
}
