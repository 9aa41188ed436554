package engine

import (
	"maps"
	"path/filepath"

	"github.com/cf-benchmark/cf-benchmark/internal/version"
	"github.com/cf-benchmark/cf-benchmark/platform"
)

// Pushed is the program a run pushes besides the apps under test: cmd/cfbench, one
// linux/amd64 executable that is the generator (`cfbench worker`), the tunnel, the
// relay and the drain.
type Pushed struct {
	// Binary is the path of the executable.
	Binary string
	// Version is the version of the plugin that pushes it, given to every app pushed
	// from it (version.PushedByEnv): a program of another version refuses to start.
	Version string
}

// app is b pushed as cfbench's program prog ("worker", "tunnel", "relay", "drain").
func (p Pushed) app(prog string, b platform.BinaryApp) platform.BinaryApp {
	b.Binary = p.Binary
	b.Command = "./" + filepath.Base(p.Binary) + " " + prog
	b.Env = maps.Clone(b.Env)
	if p.Version != "" {
		if b.Env == nil {
			b.Env = map[string]string{}
		}
		b.Env[version.PushedByEnv] = p.Version
	}
	return b
}
