// Package engine runs a benchmark spec: it creates the run, walks the ramp step by step,
// keeps the generators loaded, records step boundaries, applies stop conditions and the
// checks on its own measurement, and leaves every sample in the results store.
//
// Generators are a Fleet per variant: instances started in this process for url:
// variants (no Cloud Foundry needed), or generator apps pushed to a Cloud Foundry and
// scaled through the Cloud Controller (Deploy). Either way the instances follow the plan
// the engine writes into the results database (package worker).
//
// # Its phases, in the order a session runs them
//
// A file's name begins with its phase. RunSession (session.go) runs the phases in this
// order, and each reads what the one before it made:
//
//  1. plan*.go: the spec and each manifest it pushes, read once into a Plan (PlanOf),
//     and judged before anything starts (Preflight: where it can run, the header
//     values' variables, the manifests, the faults, the limits and quotas). The later
//     phases read the spec and the manifests from the plan, and check them no more.
//  2. deploy*.go: on Cloud Foundry, the landscape (Deploy): the apps under test and
//     the generator apps, the tunnel to the results database, the relay, the router
//     logs' drain; and the cleanup when the run is over.
//  3. run*.go: the run (Run, run.go): each variant's ramp (run_ramp.go), level by
//     level (run_levels.go), with its fleet of generators (run_fleet.go); the stop
//     conditions, the faults it injects, the app instances it watches, the results
//     database going away mid-run (run_outage.go) and the samples lost (run_loss.go).
//  4. collect*.go: the collectors' wiring: container metrics, the apps' database
//     connections and their in-app timings during the run; the router logs after it,
//     from the source the spec names (and access logs parsed for the logs command).
//  5. checks*.go: the checks on the run's own measurement: after each step
//     (checks.go, checks_neighbours.go) and on the router logs (checks_collected.go).
//  6. session*.go: the stages after the run (the export and the report), what a
//     session tells its reporter, and the dashboard and metrics that watch it.
//
// Before a run starts, deadruns*.go marks the runs whose process died as aborted and
// stores what their in-process generators spilled. The files without a phase serve the
// commands that run no session (export, status, the state directory).
package engine
