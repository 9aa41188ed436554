package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cf-benchmark/cf-benchmark/collectors/apptimings"
	"github.com/cf-benchmark/cf-benchmark/collectors/logcache"
	"github.com/cf-benchmark/cf-benchmark/platform"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// DeployConfig says what Deploy pushes besides the apps under test.
type DeployConfig struct {
	CF *platform.CF
	// API is the Cloud Controller's URL, recorded in Access.
	API string
	// Pushed is the program pushed as the generators, the tunnel, and the drain and the
	// relay when the spec has them, with the binary buildpack.
	Pushed   Pushed
	Reporter Reporter
	Logger   *slog.Logger
	// StartTimeout bounds the wait for pushed apps to run (default 5 min).
	StartTimeout time.Duration
	// LookupEnv gives the ${NAME}s of header values, which are set on the generator
	// apps (default os.LookupEnv).
	LookupEnv func(string) (string, bool)
}

// Deployment is a spec's landscape on a Cloud Foundry, ready to run: the apps under test
// running, a generator app per variant at 0 instances, and the results database reached
// through the tunnel app. Close it when the run is over.
type Deployment struct {
	cf        *platform.CF
	Landscape *platform.Landscape
	// Access finds the results database again later (status, export).
	Access Access
	// Store is the results database, through the tunnel; storeKind says what it is
	// (one Postgres, or a Citus cluster and its nodes).
	Store     *resultsdb.Store
	storeKind string
	variants  map[string]*deployedVariant
	order     []string
	close     func()
	// pushed is pushed as the run's drain (collectors.router_logs.source drain);
	// startTimeout bounds the wait for it, and for the instances a ramp of app
	// instances scales an app under test to, to run.
	pushed       Pushed
	startTimeout time.Duration
	// note tells the user what the deployment does besides the run (cleanup).
	note func(string)
	// relay is the run's relay app, when its generators go through one; Close stops it.
	relay *platform.App
	// secretEnv are the generator apps' variables that hold this run's secrets (the
	// headers' ${NAME}s, the relay's token): Close removes them, so they do not
	// outlive the run in the Cloud Controller.
	secretEnv []string
	// databases are the apps' databases whose connections the run watches.
	databases []watchedDB
	// logCache reads container metrics with cumulative counters every metricsEvery,
	// when the foundation has a Log Cache (nil otherwise); log is for its failures.
	logCache     *logcache.Poller
	metricsEvery time.Duration
	log          *slog.Logger
	// hostCores is, per host that process stats report, the cores the instances there
	// may use, where the foundation says (the local foundation's cfbench_cells); empty
	// on Cloud Foundry, whose API does not say: a step's CPU available is then unknown,
	// its cells still counted.
	hostCores map[string]float64
	// ownApps are the names of the spec's own apps in the generators space besides the
	// generator apps: the tunnel, the relay and the drain (see ours).
	ownApps []string
	// cleanup is what Close does with the apps the run pushed.
	cleanup spec.Cleanup
}

// deployedVariant is what a variant runs as.
type deployedVariant struct {
	app *platform.App // nil for a url: variant
	// config is what app was pushed as, for the run's record; nil for a url: variant.
	config *resultsdb.AppConfig
	target platform.Target
	fleet  *cfFleet
	// timings flushes the app's in-app timings; nil unless collectors.app_timings is
	// enabled and the variant pushes an app.
	timings      *apptimings.Client
	timingsToken string
	// poolSize is the app's database pool per instance (PoolSizeEnv in its
	// environment), 0 when unknown.
	poolSize int
}

// GeneratorApp is the name of a variant's generator app (in the generators space):
// `cf scale` it by hand to add load mid-run.
func GeneratorApp(sp *spec.Spec, variant string) string {
	return fmt.Sprintf("%s-gen-%s", sp.Name, variant)
}

// Deploy makes sp's landscape ready on cf: it checks (or, when the spec allows, creates)
// the org, spaces and isolation segments, ensures the results database's service
// instance, pushes the tunnel app with new per-run credentials and connects to the
// database through it, pushes every manifest variant into the apps space and a
// generator app per variant (0 instances) into the generators space, both bound to the
// database, and waits until the apps run. plan is Preflight's, without problems: the
// spec and the manifests are read from it, not checked again.
func Deploy(ctx context.Context, plan *Plan, cfg DeployConfig) (_ *Deployment, err error) {
	sp := plan.spec
	if cfg.Reporter == nil {
		cfg.Reporter = discardReporter{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 5 * time.Minute
	}
	if cfg.LookupEnv == nil {
		cfg.LookupEnv = os.LookupEnv
	}
	if cfg.Pushed.Binary == "" {
		return nil, errors.New("no cfbench program to push as the generators and the tunnel")
	}
	genEnv := map[string]string{"GOMEMLIMIT": "200MiB", "CFBENCH_DB_SERVICE": sp.ResultsDB.ServiceInstance}
	for _, name := range sp.Workload.HeaderVars() {
		genEnv[name], _ = cfg.LookupEnv(name)
	}
	cf, note := cfg.CF, cfg.Reporter.Note
	land, err := platform.EnsureLandscape(ctx, cf.Client(), sp.Landscape)
	if err != nil {
		return nil, err
	}
	for _, c := range land.Changes {
		note("landscape: " + c)
	}
	for _, w := range land.Warnings {
		note("warning: " + w)
	}
	org, gens := land.Org, land.Generators
	rdb := sp.ResultsDB
	siGUID, created, err := cf.EnsureServiceInstance(ctx, gens.GUID, rdb.ServiceInstance, rdb.Offering, rdb.Plan)
	if err != nil {
		return nil, fmt.Errorf("results database: %w", err)
	}
	if created {
		note(fmt.Sprintf("created service instance %s (%s %s) in space %s", rdb.ServiceInstance, rdb.Offering, rdb.Plan, gens.Name))
	}
	serviceGUIDs := map[string]string{}
	for _, si := range sp.Landscape.Services {
		guid, created, err := cf.EnsureServiceInstance(ctx, land.Apps.GUID, si.Name, si.Offering, si.Plan)
		serviceGUIDs[si.Name] = guid
		if err != nil {
			return nil, fmt.Errorf("service instance %s of the apps: %w", si.Name, err)
		}
		if created {
			note(fmt.Sprintf("created service instance %s (%s %s) in space %s", si.Name, si.Offering, si.Plan, land.Apps.Name))
		}
	}
	d := &Deployment{cf: cf, Landscape: land, variants: map[string]*deployedVariant{}, log: cfg.Logger,
		pushed: cfg.Pushed, startTimeout: cfg.StartTimeout, ownApps: []string{TunnelApp(sp), RelayApp(sp), DrainApp(sp)}, cleanup: sp.Cleanup, note: note,
		Access: Access{API: cfg.API, Org: org, Space: gens.Name, SpaceGUID: gens.GUID,
			TunnelApp: TunnelApp(sp), ServiceInstance: rdb.ServiceInstance, ServiceInstanceGUID: siGUID}}

	if err := refuseLiveRun(ctx, cf, sp.Name, d.Access, cfg.Logger); err != nil {
		return nil, err
	}
	note("pushing the tunnel app " + d.Access.TunnelApp)
	if err := pushTunnel(ctx, cf, sp, land, cfg.Pushed, cfg.StartTimeout); err != nil {
		return nil, err
	}
	store, closeStore, err := Connect(ctx, cf, d.Access, cfg.Logger)
	if err != nil {
		return nil, err
	}
	d.Store, d.close = store, closeStore
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	if d.storeKind, err = storeKind(ctx, store); err != nil {
		return nil, err
	}
	d.secretEnv = sp.Workload.HeaderVars()
	if sp.UsesRelay() {
		note(fmt.Sprintf("pushing the relay app %s: the generators reach the results database through it (results_db.relay %s, ramp peak %d generator instance(s))",
			RelayApp(sp), sp.ResultsDB.Relay, sp.PeakGenerators()))
		var env map[string]string
		if d.relay, env, err = pushRelay(ctx, cf, sp, land, cfg.Pushed, cfg.StartTimeout); err != nil {
			return nil, err
		}
		maps.Copy(genEnv, env)
		d.secretEnv = append(d.secretEnv, RelayTokenEnv)
	}

	for _, v := range sp.Variants {
		dv := &deployedVariant{target: platform.Target{URL: v.URL}}
		if v.Manifest != "" {
			env := timingsEnv(sp, v, dv)
			var err error
			m, err := plan.manifest(v)
			if err != nil {
				return nil, fmt.Errorf("variant %s: %w", v.Name, err)
			}
			if dv.config, err = appConfig(m, v, env); err != nil {
				return nil, fmt.Errorf("variant %s: %w", v.Name, err)
			}
			note(fmt.Sprintf("pushing %s from %s", v.Name, v.Manifest))
			if dv.app, err = cf.PushApp(ctx, org, land.Apps.Name, m, overrides(v, env)); err != nil {
				return nil, fmt.Errorf("variant %s: %w", v.Name, err)
			}
			dv.poolSize = poolSizeOf(ctx, cf, dv.app.GUID, cfg.Logger)
		}
		name := GeneratorApp(sp, v.Name)
		note("pushing the generator app " + name)
		gen, err := cf.PushBinary(ctx, cfg.Pushed.app("worker", platform.BinaryApp{Org: org, Space: gens.Name, Name: name,
			Memory: "256M", Disk: "1G", Instances: 0, HealthCheck: "process", Services: []string{rdb.ServiceInstance},
			Env: genEnv}))
		if err != nil {
			return nil, fmt.Errorf("variant %s: generator app: %w", v.Name, err)
		}
		dv.fleet = &cfFleet{cf: cf, app: gen}
		d.variants[v.Name], d.order = dv, append(d.order, v.Name)
	}
	for _, name := range d.order {
		dv := d.variants[name]
		if dv.app == nil {
			continue
		}
		if err := cf.WaitRunning(ctx, dv.app.ProcessGUID, max(dv.app.Instances, 1), cfg.StartTimeout); err != nil {
			return nil, fmt.Errorf("variant %s: app %s: %w", name, dv.app.Name, err)
		}
		if dv.target, err = cf.RouteTarget(ctx, dv.app.GUID); err != nil {
			return nil, fmt.Errorf("variant %s: %w", name, err)
		}
		note(fmt.Sprintf("%s runs as %s (%d instance(s)) at %s", name, dv.app.Name, max(dv.app.Instances, 1), dv.target.URL))
		if dv.timingsToken != "" {
			if dv.timings, err = apptimings.New(apptimings.Config{URL: dv.target.URL, ConnectTo: dv.target.ConnectTo,
				Path: sp.Collectors.AppTimings.Path, Token: dv.timingsToken, AppGUID: dv.app.GUID}); err != nil {
				return nil, fmt.Errorf("variant %s: %w", name, err)
			}
		}
	}
	d.databases = findDatabases(ctx, cf, sp, serviceGUIDs, d, note)
	if cores, err := cf.HostCores(ctx); err == nil {
		d.hostCores = cores
	}
	return d, nil
}

// overrides is how v changes its manifest's app: env (the spec's, the matrix's and
// the run's own), and a matrix cell's memory, instances and name suffix.
func overrides(v spec.Variant, env map[string]string) platform.Overrides {
	return platform.Overrides{Env: env, Memory: v.Memory, Instances: v.Instances, NameSuffix: v.MatrixSuffix()}
}

// appConfig is what v's app (of manifest m) is pushed as with env, for the run's record: the run's
// app timings token is left out.
func appConfig(m *platform.Manifest, v spec.Variant, env map[string]string) (*resultsdb.AppConfig, error) {
	if _, ok := env[envTimingsToken]; ok {
		env = maps.Clone(env)
		env[envTimingsToken] = "(redacted)"
	}
	r, err := m.Resolve(overrides(v, env))
	if err != nil {
		return nil, err
	}
	return &resultsdb.AppConfig{Manifest: string(r.Manifest), Env: r.Env, MemoryMB: r.MemoryMB, Instances: r.Instances}, nil
}

// ErrRunUnderWay means a run of the same spec is alive on the foundation.
var ErrRunUnderWay = errors.New("another run of this spec is under way")

// liveRunLookup bounds the look for a live run through the tunnel app as it is.
const liveRunLookup = 20 * time.Second

// refuseLiveRun fails with ErrRunUnderWay when a run of the spec named name is alive:
// runs of one spec share their generator apps and tunnel app, and pushing the tunnel
// again (with new credentials) would cut the live run off its results database. It
// looks through the tunnel app as it is; where there is none, or it cannot be reached,
// no run can be alive through it, and the new run goes on.
func refuseLiveRun(ctx context.Context, cf *platform.CF, name string, access Access, log *slog.Logger) error {
	app, err := cf.FindApp(ctx, access.SpaceGUID, access.TunnelApp)
	if err != nil || app == nil {
		return err
	}
	lctx, cancel := context.WithTimeout(ctx, liveRunLookup)
	defer cancel()
	store, closeStore, err := Connect(lctx, cf, access, log)
	if err != nil {
		log.Info("no live run looked for: the tunnel app as it is cannot be reached", "app", access.TunnelApp, "err", err)
		return nil
	}
	defer closeStore()
	live, err := store.LiveRuns(lctx, name)
	if err != nil || len(live) == 0 {
		return err
	}
	r := live[0]
	return fmt.Errorf("%w: run %s of %s (its last heartbeat %s ago). Two runs of one spec at once would share its generator apps and "+
		"its tunnel app; wait for it to end, or stop it with Ctrl-C where it runs. Try: cf benchmark-status %s",
		ErrRunUnderWay, r.ID, name, max(0, time.Since(r.LastHeartbeat)).Round(time.Second), r.ID)
}

// Close cleans up after the run as the spec's cleanup says (cleanUp) and closes the
// tunnel and the store. The generators are at 0 instances by then (the run scaled
// them down), and the tunnel app stays: status, export and collect-logs reach the
// results through it.
func (d *Deployment) Close() {
	for _, dv := range d.variants {
		if dv.timings != nil {
			dv.timings.Close()
		}
	}
	if d.relay != nil && d.cleanup != spec.CleanupDelete {
		// Stopped: its generators have stored their samples, and its connections are
		// freed; the next run pushes over it.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := d.cf.StopApp(ctx, d.relay.GUID); err != nil {
			d.log.Warn("stop the relay app", "app", d.relay.Name, "err", err)
		}
		cancel()
		d.relay = nil
	}
	d.forgetSecrets()
	d.cleanUp()
	if d.close != nil {
		d.close()
		d.close = nil
	}
}

// cleanUp does what the spec's cleanup says with the apps the run pushed: stop (the
// default) stops the apps under test, so that they take no CPU from the next run on
// their cell; delete deletes them, the generator apps and the relay; keep leaves them.
// A failure is noted with the cf command that does it by hand.
func (d *Deployment) cleanUp() {
	if d.cleanup == spec.CleanupKeep {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var apps []*platform.App
	for _, name := range d.order {
		dv := d.variants[name]
		if dv.app != nil {
			apps = append(apps, dv.app)
		}
		if d.cleanup == spec.CleanupDelete && dv.fleet != nil {
			apps = append(apps, dv.fleet.app)
		}
	}
	if d.relay != nil {
		apps = append(apps, d.relay)
		d.relay = nil
	}
	verb, act, try := "stopped", d.cf.StopApp, "cf stop"
	if d.cleanup == spec.CleanupDelete {
		verb, act, try = "deleted", d.cf.DeleteApp, "cf delete -f"
	}
	var done []string
	for _, a := range apps {
		if err := act(ctx, a.GUID); err != nil {
			d.note(fmt.Sprintf("warning: cleanup %s: %v. Try: %s %s", d.cleanup, err, try, a.Name))
			continue
		}
		done = append(done, a.Name)
	}
	d.variants, d.order = nil, nil
	if len(done) > 0 {
		d.note(fmt.Sprintf("cleanup %s: %s %s; the tunnel app stays for status and export", d.cleanup, verb, strings.Join(done, ", ")))
	}
}

// forgetSecrets removes the run's secrets from its generator apps' environment; a
// failure is logged with what to remove by hand.
func (d *Deployment) forgetSecrets() {
	if len(d.secretEnv) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, name := range d.order {
		dv := d.variants[name]
		if dv.fleet == nil {
			continue
		}
		if err := d.cf.UnsetAppEnv(ctx, dv.fleet.app.GUID, d.secretEnv); err != nil {
			d.log.Warn("remove the run's secrets from the generator app's environment: cf unset-env it by hand", "app", dv.fleet.app.Name, "vars", d.secretEnv, "err", err)
		}
	}
	d.secretEnv = nil
}

func (d *Deployment) variant(name string) *deployedVariant { return d.variants[name] }

// appNames are the pushed apps under test.
func (d *Deployment) appNames() []string {
	var out []string
	for _, name := range d.order {
		if a := d.variants[name].app; a != nil {
			out = append(out, a.Name)
		}
	}
	return out
}

// poolSizeOf reads the database pool size per instance from the app's environment
// (PoolSizeEnv, manifest and spec env alike): 0 when it is not there, not a positive
// integer, or the environment cannot be read (the pool-exhaustion finding then lacks it).
func poolSizeOf(ctx context.Context, cf *platform.CF, appGUID string, log *slog.Logger) int {
	env, err := cf.AppEnv(ctx, appGUID)
	if err != nil {
		log.Warn("read the app's pool size", "app", appGUID, "err", err)
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(env[PoolSizeEnv]))
	if err != nil || n < 1 {
		return 0
	}
	return n
}
