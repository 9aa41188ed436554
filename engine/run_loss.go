package engine

import (
	"context"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/wait"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// lossWait bounds the wait for stopped generators to record their final counters:
// Cloud Foundry gives an instance 10 s after SIGTERM, and one killed is silent after
// 10 s more.
const lossWait = 25 * time.Second

// LossCheck names the finding of a variant whose generators sent samples that were not
// stored.
const LossCheck = "samples_lost"

// judgeLoss waits (within lossWait) until every generator instance of the run has
// stopped or gone silent, then records a finding for each variant whose instances
// sent samples that were not stored, saying exactly how many (or, for instances
// that left no final count, at least how many).
func (r *runner) judgeLoss(ctx context.Context) {
	deadline := time.Now().Add(lossWait)
	for _, leg := range r.sp.Legs() {
		for {
			l, err := r.opts.Store.Loss(ctx, r.run.ID, leg.Name)
			if err != nil {
				r.opts.Logger.Warn("read the samples the generators lost", "variant", leg.Name, "err", err)
				break
			}
			if l.Running > 0 && time.Now().Before(deadline) && wait.For(ctx, r.opts.PollEvery) {
				continue
			}
			if l.Any() {
				ev := map[string]any{"lost": l.Samples, "instances": l.Workers, "silent_instances": l.Silent, "lost_at_least": l.SilentSamples}
				r.finding(leg.Name, -1, Finding{Check: LossCheck, Level: spec.CheckWarn, Message: l.String(), Evidence: ev})
			}
			break
		}
	}
}
