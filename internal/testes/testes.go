// Package testes gives tests a real Elasticsearch 8: one node per test binary (or one a
// test run shares, below), started on first use from Elasticsearch's integ-test
// distribution (installed by scripts/install-es.sh, which this package runs when
// needed), on 127.0.0.1 and a free port, with security off, single-node discovery, a
// 256 MB heap and the disk watermarks disabled, its data and logs in a temp dir it
// owns. Run as root, the node runs as an unprivileged user (Elasticsearch refuses
// root). Under -short (`make check`) its callers skip; otherwise they fail (they do not
// skip) when it cannot start; the error carries the tail of its log.
//
// When CFBENCH_TEST_ES_URL names a running Elasticsearch (http://127.0.0.1:PORT), the
// test binary uses it instead of starting one and leaves it running: scripts/test.sh
// starts one with tools/testnodes for every package of a run. Tests on it keep to
// their own indices (Index) and leave cluster-wide state alone; a test that needs a
// node of its own (to stop it, to look at its process, to change cluster settings)
// calls Start. Without the variable, as with `go test ./engine`, each test binary
// starts its own.
//
// Environment: CFBENCH_TEST_ES_URL (a running node to share, above), CFBENCH_ES_HOME
// (an unpacked distribution; skips the install script),
// CFBENCH_ES_USER (the user to run as when root; default cfbench-es, else nobody),
// ES_JAVA_HOME (default: the JDK of the java on PATH).
package testes

import (
	"context"
	"testing"

	"github.com/cf-benchmark/cf-benchmark/internal/testnode"
)

// StartTimeout bounds how long a node may take to become ready.
const StartTimeout = testnode.StartTimeout

// Node is a running Elasticsearch started by this package.
type Node = testnode.Node

var flavor = testnode.Flavor{
	Name:      "Elasticsearch",
	Command:   "elasticsearch",
	Script:    "scripts/install-es.sh",
	HomeEnv:   "CFBENCH_ES_HOME",
	URLEnv:    "CFBENCH_TEST_ES_URL",
	Product:   "Elasticsearch",
	UserEnv:   "CFBENCH_ES_USER",
	EnvPrefix: "ES",
	Heap:      "256m",
	Settings:  func(string) string { return "xpack.security.enabled: false\n" },
}

var shared = testnode.Shared{Flavor: flavor}

// Flavor is how this package launches a node, for a program that starts one for many
// test binaries (tools/testnodes).
func Flavor() testnode.Flavor { return flavor }

// URL returns the base URL of the test binary's Elasticsearch, starting it on first
// use. It fails t when the node cannot start.
func URL(t testing.TB) string {
	t.Helper()
	return Server(t).URL
}

// Server returns the test binary's node, starting it on first use (or the running one
// CFBENCH_TEST_ES_URL names).
func Server(t testing.TB) *Node {
	t.Helper()
	return shared.Server(t)
}

// Index returns an index name unique within the test binary, starting with prefix.
func Index(prefix string) string { return testnode.Index(prefix) }

// Main runs the tests and then stops the node and removes its files. Use it from
// TestMain: func TestMain(m *testing.M) { testes.Main(m) }.
func Main(m *testing.M) { shared.Main(m) }

// Stop stops the test binary's node, if started: for a TestMain that also runs other
// shared servers (see Main).
func Stop() { shared.Stop() }

// Start installs (if needed) and starts a node and waits until its cluster is yellow
// or green. The caller stops it.
func Start(ctx context.Context) (*Node, error) { return testnode.Start(ctx, flavor) }
