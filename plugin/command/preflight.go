package command

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/cf-benchmark/cf-benchmark/engine"
	"github.com/cf-benchmark/cf-benchmark/plugin/payload"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// preflight is every check run makes before it touches a foundation or a database, and
// all that validate does: engine.Preflight on the spec, then, for a spec with a
// landscape, that no database is given (its results go to results_db) and that the
// program to push is found (findPushed). dsnGiven tells whether --db or CFBENCH_DB
// gives a database.
func preflight(ctx context.Context, env *Env, sp *spec.Spec, dsnGiven bool, binDir string, quotas engine.QuotaReader) (engine.Pushed, *engine.Plan, error) {
	plan, err := engine.Preflight(ctx, sp, env.lookupEnv, quotas)
	if err != nil {
		return engine.Pushed{}, plan, err
	}
	if sp.Landscape == nil {
		return engine.Pushed{}, plan, nil
	}
	if dsnGiven {
		return engine.Pushed{}, plan, usagef("--db and CFBENCH_DB are for runs without Cloud Foundry: this spec has a landscape, and its results go to results_db.service_instance %s", sp.ResultsDB.ServiceInstance)
	}
	bin, err := findPushed(env, binDir)
	return engine.Pushed{Binary: bin, Version: env.Version}, plan, err
}

// findPushed finds the linux/amd64 cfbench program a run on Cloud Foundry pushes: in
// flagDir (--bin-dir) or $CFBENCH_BIN_DIR when one is given, else the one this plugin
// carries, else in env.BinDirs.
func findPushed(env *Env, flagDir string) (string, error) {
	dirs := env.BinDirs
	switch d := env.Getenv("CFBENCH_BIN_DIR"); {
	case flagDir != "":
		dirs = []string{flagDir}
	case d != "":
		dirs = []string{d}
	case env.Carried != nil:
		path, version, err := env.Carried()
		switch {
		case err == nil && version != env.Version:
			// It would refuse to start when pushed: say so now, not after a crash loop.
			return "", usagef("this cf-benchmark (%s) carries cfbench %s, which would refuse to run for it: build both with make build, or give --bin-dir DIR with a cfbench %s",
				env.Version, version, env.Version)
		case err == nil:
			return path, nil
		case !errors.Is(err, payload.ErrNotCarried):
			return "", err
		}
	}
	for _, d := range dirs {
		if p := filepath.Join(d, payload.Name); isFile(p) {
			return p, nil
		}
	}
	return "", usagef("%s (linux/amd64, the program pushed to Cloud Foundry) not found in %s, and this build of cf-benchmark carries none: build with make build (bin/ then holds both), or give --bin-dir DIR or CFBENCH_BIN_DIR",
		payload.Name, strings.Join(dirs, ", "))
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
