package command

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/cf-benchmark/cf-benchmark/engine"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// readSpec reads and parses the spec file; relative paths in it are resolved against
// its directory. With a landscape file (--landscape: tofu output -json of terraform/),
// its landscape and results_db replace the spec's, and the text returned is the spec
// with them in it.
func readSpec(file, landscape string) (*spec.Spec, []byte, error) {
	text, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, usagef("read spec: %v", err)
	}
	if landscape != "" {
		land, err := os.ReadFile(landscape)
		if err != nil {
			return nil, nil, usagef("read the landscape: %v", err)
		}
		return spec.ParseWithLandscape(file, text, filepath.Dir(file), landscape, land)
	}
	sp, err := spec.Parse(file, text, filepath.Dir(file))
	if err != nil {
		return nil, nil, err
	}
	return sp, text, nil
}

// pushed are the binaries a run on Cloud Foundry pushes; drain only for router logs
// from a drain, relay only for generators through a relay.
type pushed struct{ worker, tunnel, drain, relay string }

// preflight is every check run makes before it touches a foundation or a database, and
// all that validate does: engine.Preflight on the spec, then, for a spec with a
// landscape, that no database is given (its results go to results_db) and that the
// binaries to push are found (binDir, else $CFBENCH_BIN_DIR, else env.BinDirs).
// dsnGiven tells whether --db or CFBENCH_DB gives a database.
func preflight(ctx context.Context, env *Env, sp *spec.Spec, dsnGiven bool, binDir string, quotas engine.QuotaReader) (pushed, *engine.Plan, error) {
	plan, err := engine.Preflight(ctx, sp, env.lookupEnv, quotas)
	if err != nil {
		return pushed{}, plan, err
	}
	if sp.Landscape == nil {
		return pushed{}, plan, nil
	}
	if dsnGiven {
		return pushed{}, plan, usagef("--db and CFBENCH_DB are for runs without Cloud Foundry: this spec has a landscape, and its results go to results_db.service_instance %s", sp.ResultsDB.ServiceInstance)
	}
	bins, err := findBins(env, binDir, sp.Collectors.RouterLogs != nil && sp.Collectors.RouterLogs.Source == spec.SourceDrain, sp.UsesRelay())
	return bins, plan, err
}

// findBins finds the generator and tunnel binaries that runs on Cloud Foundry push,
// with drain the drain's and with relay the relay's, all in one directory.
func findBins(env *Env, flagDir string, drain, relay bool) (pushed, error) {
	dirs := env.BinDirs
	if d := env.Getenv("CFBENCH_BIN_DIR"); d != "" {
		dirs = []string{d}
	}
	if flagDir != "" {
		dirs = []string{flagDir}
	}
	names := []string{"cfbench-worker", "cfbench-tunnel"}
	if drain {
		names = append(names, "cfbench-drain")
	}
	if relay {
		names = append(names, "cfbench-relay")
	}
	for _, d := range dirs {
		found := true
		for _, n := range names {
			found = found && isFile(filepath.Join(d, n))
		}
		if !found {
			continue
		}
		b := pushed{worker: filepath.Join(d, "cfbench-worker"), tunnel: filepath.Join(d, "cfbench-tunnel")}
		if drain {
			b.drain = filepath.Join(d, "cfbench-drain")
		}
		if relay {
			b.relay = filepath.Join(d, "cfbench-relay")
		}
		return b, nil
	}
	list := strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
	return pushed{}, usagef("%s (linux/amd64) not found in %s: build them with make build (into bin/), then give --bin-dir DIR or CFBENCH_BIN_DIR", list, strings.Join(dirs, ", "))
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
