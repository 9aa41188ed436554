package engine

import (
	"strings"
	"testing"

	"github.com/cf-benchmark/cf-benchmark/spec"
)

// TestGeneratorEnvCarriesARelay: the pushed generators get the relay the CLI's
// environment names, and a relay without a proper token is refused before any push.
func TestGeneratorEnvCarriesARelay(t *testing.T) {
	t.Parallel()
	sp := &spec.Spec{ResultsDB: &spec.ResultsDB{ServiceInstance: "results"}}
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	got, err := generatorEnv(sp, env(nil))
	if err != nil || got["CFBENCH_DB_SERVICE"] != "results" || got[RelayURLEnv] != "" {
		t.Fatalf("without a relay: %v, %v", got, err)
	}
	got, err = generatorEnv(sp, env(map[string]string{RelayURLEnv: "https://relay.example.com", RelayTokenEnv: "0123456789abcdef0123"}))
	if err != nil || got[RelayURLEnv] != "https://relay.example.com" || got[RelayTokenEnv] != "0123456789abcdef0123" {
		t.Fatalf("with a relay: %v, %v", got, err)
	}
	if _, err := generatorEnv(sp, env(map[string]string{RelayURLEnv: "https://relay.example.com", RelayTokenEnv: "short"})); err == nil || !strings.Contains(err.Error(), RelayTokenEnv) {
		t.Errorf("a short token: %v, want an error naming %s", err, RelayTokenEnv)
	}
}
