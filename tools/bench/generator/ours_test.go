package generator

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/spec"
)

// TestOursOpenSpecs fills in the open-loop template as each of our generators does: a
// spec that validates, with the default tick for cf-benchmark (and no tick field, which
// the baseline's older build would refuse) and 1 ms for cf-benchmark-tick1ms.
func TestOursOpenSpecs(t *testing.T) {
	for _, c := range []struct {
		name string
		tick time.Duration
	}{{Ours, spec.DefaultTick}, {OursTick1ms, time.Millisecond}, {Baseline, spec.DefaultTick}} {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{URL: "http://127.0.0.1:18080/", Conns: 64, Scratch: t.TempDir(), DSN: "postgres://x", Assets: ".."}
			cmd, err := ours(c.name, "cf-benchmark").Open(cfg, 10*time.Second, 20000)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(cfg.Scratch, "spec.yml")
			if !strings.Contains(strings.Join(cmd.Args, " "), file) {
				t.Fatalf("command %q does not run %s", cmd.Args, file)
			}
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			s, err := spec.Parse(file, b, cfg.Scratch)
			if err != nil {
				t.Fatalf("the spec does not validate: %v\n%s", err, b)
			}
			if w := s.Workload; w.Tick != c.tick || w.Rate != 20000 || w.MaxInFlight != 64 {
				t.Fatalf("workload %+v, want tick %v at 20000 req/s, 64 in flight", w, c.tick)
			}
			if hasField := strings.Contains(string(b), "\n  tick:"); hasField != (c.name == OursTick1ms) {
				t.Fatalf("spec names a tick: %v, want it only for %s:\n%s", hasField, OursTick1ms, b)
			}
		})
	}
}

// The 1 ms variant is measured only when named; the baseline only with a build to run.
func TestDefaultGenerators(t *testing.T) {
	without, with := Default(false), Default(true)
	if slices.Contains(without, OursTick1ms) || slices.Contains(with, OursTick1ms) || slices.Contains(without, Baseline) ||
		!slices.Contains(with, Baseline) || !slices.Contains(without, Ours) || !slices.Contains(without, "oha") {
		t.Fatalf("Default(false) = %q, Default(true) = %q", without, with)
	}
	if len(with) != len(Names)-1 {
		t.Fatalf("Default(true) = %q, want every generator of %q but %s", with, Names, OursTick1ms)
	}
}
