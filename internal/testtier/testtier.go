// Package testtier sorts tests into the project's two tiers. `make check` runs
// `go test -short`: every test that needs nothing beyond the Go toolchain and loopback.
// `make test` (and CI) runs everything, never with -short, so a test that needs an
// external program (a real PostgreSQL, Elasticsearch, OpenSearch, a JDK, Node.js, the
// real cf CLI, or the local foundation, which runs Postgres) calls External first: it
// skips under -short, saying which tier runs it, and in `make test` it does nothing, so
// a missing program fails the test instead of skipping it.
package testtier

import "testing"

// External skips t when tests run with -short (`make check`), naming what t needs,
// e.g. "a real PostgreSQL server". Without -short it returns at once.
func External(t testing.TB, needs string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("needs %s: runs in `make test`, not in `make check` (go test -short)", needs)
	}
}
