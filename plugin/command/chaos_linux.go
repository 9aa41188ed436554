package command

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/cf-benchmark/cf-benchmark/foundation"
	"github.com/cf-benchmark/cf-benchmark/platform"
)

// chaosUsage is how `foundation chaos` is called.
const chaosUsage = "give one of: chaos crash APP [INDEX], chaos oom APP INDEX, chaos evacuate CELL, chaos restart-router, chaos expire-tokens"

// foundationChaos applies a fault to the foundation running from dir (args after
// "chaos": the action and its operands) through its API's chaos endpoint
// (platform.CF.Chaos), as the admin whose credentials the state dir's settings hold.
func foundationChaos(ctx context.Context, env *Env, dir string, args []string) error {
	if len(args) == 0 {
		return usagef("%s", chaosUsage)
	}
	action, ops := args[0], args[1:]
	req := platform.ChaosRequest{Action: action}
	var app string
	switch action {
	case "crash", "oom":
		if len(ops) < 1 || len(ops) > 2 || action == "oom" && len(ops) != 2 {
			if action == "oom" {
				return usagef("chaos oom takes an app (name or guid) and an instance index: chaos oom APP INDEX")
			}
			return usagef("chaos crash takes an app (name or guid) and an optional instance index: chaos crash APP [INDEX]")
		}
		app = ops[0]
		if len(ops) == 2 {
			i, err := strconv.Atoi(ops[1])
			if err != nil || i < 0 {
				return usagef("instance index %q: want 0 or more", ops[1])
			}
			req.Index = i
		}
	case "evacuate":
		if len(ops) != 1 {
			return usagef("chaos evacuate takes a cell (isolation segment) name: chaos evacuate CELL")
		}
		req.Cell = ops[0]
	case "restart-router", "expire-tokens":
		if len(ops) != 0 {
			return usagef("chaos %s takes no operands", action)
		}
	default:
		return usagef("unknown chaos action %q: %s", action, chaosUsage)
	}

	st, err := foundation.ReadStatus(ctx, dir)
	if errors.Is(err, foundation.ErrNotRunning) {
		// Exit 3, as foundation status; that exit prints nothing of its own.
		fmt.Fprintf(env.Stderr, "error: no foundation is running from %s; start one with: cf-benchmark foundation start --detach --state-dir %s\n", dir, dir)
		return err
	}
	if err != nil {
		return err
	}
	if !st.Answering {
		return fmt.Errorf("the foundation running from %s (pid %d) does not answer: see %s", dir, st.PID, foundation.LogFile(dir))
	}
	// As its admin, whose credentials the state dir keeps: no cf CLI login is needed.
	cf, err := platform.ConnectUser(st.Info.APIURL, st.Info.User, st.Info.Password)
	if err != nil {
		return fmt.Errorf("the foundation's API: %w", err)
	}
	if !cf.ChaosSupported(ctx) {
		return errors.New("the running foundation has no chaos endpoint (links.cfbench_chaos): restart it with this cf-benchmark")
	}
	if app != "" {
		if req.AppGUID, err = cf.AppGUID(ctx, app); err != nil {
			return err
		}
	}
	out, err := cf.Chaos(ctx, req)
	if err != nil {
		return err
	}
	at := out.At.Format(time.RFC3339Nano)
	switch action {
	case "crash", "oom":
		if len(out.Instances) == 0 {
			return fmt.Errorf("chaos %s: the foundation names no instance it hit", action)
		}
		in := out.Instances[0]
		what := "Crashed"
		if action == "oom" {
			what = "OOM-killed"
		}
		fmt.Fprintf(env.Stdout, "%s %s instance %d of %s (instance %s, cell %s) at %s; the cell restarts it.\n",
			what, in.ProcessType, in.Index, app, in.InstanceGUID, in.Cell, at)
	case "evacuate":
		fmt.Fprintf(env.Stdout, "Evacuating cell %s at %s: %d instances move (each keeps serving until its replacement runs).\n",
			ops[0], at, len(out.Instances))
		for _, in := range out.Instances {
			fmt.Fprintf(env.Stdout, "  app %s %s/%d instance %s\n", in.AppGUID, in.ProcessType, in.Index, in.InstanceGUID)
		}
	case "restart-router":
		fmt.Fprintf(env.Stdout, "Router draining since %s: it serves for its drain wait, then closes its connections and starts again on %s.\n",
			at, st.Info.RouterAddr)
	case "expire-tokens":
		fmt.Fprintf(env.Stdout, "Access tokens issued before %s are expired: clients must refresh theirs.\n", at)
	}
	return nil
}
