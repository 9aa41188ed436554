// Command testnodes starts the search nodes a test run shares: an Elasticsearch and
// an OpenSearch at once (internal/testes, internal/testos, on 127.0.0.1 and free
// ports), prints one NAME=URL line per node, the variable that points test binaries at
// it, and keeps them until SIGTERM, SIGINT or the end of its stdin, then stops them
// and exits 0. A node that cannot start makes it stop the other and exit 1, its log's
// tail on stderr. scripts/test.sh runs it for its Go packages' stage:
//
//	go build -o /tmp/testnodes ./tools/testnodes
//	/tmp/testnodes -heap 512m <fifo >urls 2>log &
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/cli"
	"github.com/cf-benchmark/cf-benchmark/internal/testes"
	"github.com/cf-benchmark/cf-benchmark/internal/testnode"
	"github.com/cf-benchmark/cf-benchmark/internal/testos"
)

func main() {
	cli.Main(func(ctx context.Context) int {
		return run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, testnode.StartAll)
	})
}

// starter starts a node of each flavor, all or none (testnode.StartAll).
type starter func(ctx context.Context, flavors ...testnode.Flavor) ([]*testnode.Node, error)

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, start starter) int {
	fs := flag.NewFlagSet("testnodes", flag.ContinueOnError)
	fs.SetOutput(stderr)
	// Twice a test binary's node's heap: the shared node takes the bulk loads of
	// several packages at once, and a bulk request may take 10% of the heap.
	heap := fs.String("heap", "512m", "each node's JVM heap")
	if code, ok := cli.Parse(fs, args); !ok {
		return code
	}
	fail := cli.Failer(fs)
	flavors := []testnode.Flavor{testes.Flavor(), testos.Flavor()}
	for i := range flavors {
		flavors[i].Heap = *heap
	}
	begin := time.Now()
	nodes, err := start(ctx, flavors...)
	if err != nil {
		return fail(err)
	}
	for i, n := range nodes {
		fmt.Fprintf(stderr, "testnodes: %s at %s (pid %d)\n", flavors[i].Name, n.URL, n.PID)
	}
	fmt.Fprintf(stderr, "testnodes: ready in %v\n", time.Since(begin).Round(time.Millisecond))
	// One write: a reader polling the file sees all lines or none.
	var env strings.Builder
	for i, n := range nodes {
		fmt.Fprintf(&env, "%s=%s\n", flavors[i].URLEnv, n.URL)
	}
	io.WriteString(stdout, env.String())
	eof := make(chan struct{})
	go func() {
		io.Copy(io.Discard, stdin)
		close(eof)
	}()
	select {
	case <-ctx.Done():
	case <-eof:
	}
	code := 0
	done := make(chan error, len(nodes))
	for _, n := range nodes {
		go func() { done <- n.Stop() }()
	}
	for range nodes {
		if err := <-done; err != nil {
			code = fail(err)
		}
	}
	return code
}
