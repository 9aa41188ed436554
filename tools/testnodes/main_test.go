package main

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/testlog"
	"github.com/cf-benchmark/cf-benchmark/internal/testnode"
)

// fakeStart "starts" a node per flavor: its Dir is a temp dir, which Stop removes.
func fakeStart(t *testing.T, heaps *[]string) starter {
	return func(_ context.Context, flavors ...testnode.Flavor) ([]*testnode.Node, error) {
		var nodes []*testnode.Node
		for i, f := range flavors {
			*heaps = append(*heaps, f.Heap)
			nodes = append(nodes, &testnode.Node{URL: "http://127.0.0.1:" + string(rune('1'+i)), Dir: t.TempDir()})
		}
		return nodes, nil
	}
}

// TestPrintsTheVariablesAndStopsTheNodes: once the nodes run, one NAME=URL line per
// flavor; they keep running until stdin ends (or a signal, the context), then stop.
func TestPrintsTheVariablesAndStopsTheNodes(t *testing.T) {
	for _, end := range []string{"stdin closed", "signal"} {
		t.Run(end, func(t *testing.T) {
			var heaps []string
			var stdout, stderr testlog.Buffer
			stdinR, stdinW := io.Pipe()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			code := make(chan int, 1)
			var nodes []*testnode.Node
			start := fakeStart(t, &heaps)
			go func() {
				code <- run(ctx, []string{"-heap", "1g"}, stdinR, &stdout, &stderr,
					func(ctx context.Context, f ...testnode.Flavor) ([]*testnode.Node, error) {
						n, err := start(ctx, f...)
						nodes = n
						return n, err
					})
			}()
			want := "CFBENCH_TEST_ES_URL=http://127.0.0.1:1\nCFBENCH_TEST_OPENSEARCH_URL=http://127.0.0.1:2\n"
			for deadline := time.Now().Add(5 * time.Second); stdout.String() != want; {
				if time.Now().After(deadline) {
					t.Fatalf("stdout %q, want %q (stderr %q)", stdout.String(), want, stderr.String())
				}
				time.Sleep(5 * time.Millisecond)
			}
			if strings.Join(heaps, " ") != "1g 1g" {
				t.Errorf("heaps %q, want -heap's for both", heaps)
			}
			select {
			case c := <-code:
				t.Fatalf("exited %d before stdin ended: %s", c, stderr.String())
			case <-time.After(50 * time.Millisecond):
			}
			for _, n := range nodes {
				if _, err := os.Stat(n.Dir); err != nil {
					t.Fatalf("a node stopped while the run is on: %v", err)
				}
			}
			if end == "signal" {
				cancel()
			} else {
				stdinW.Close()
			}
			if c := <-code; c != 0 {
				t.Fatalf("exit %d: %s", c, stderr.String())
			}
			for _, n := range nodes {
				if _, err := os.Stat(n.Dir); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("node %s not stopped: %v", n.URL, err)
				}
			}
		})
	}
}

func TestANodeThatCannotStartFails(t *testing.T) {
	var stdout, stderr testlog.Buffer
	code := run(context.Background(), nil, strings.NewReader(""), &stdout, &stderr,
		func(context.Context, ...testnode.Flavor) ([]*testnode.Node, error) {
			return nil, errors.New("opensearch on http://127.0.0.1:9: the node exited\n--- console.log (tail)\nboom")
		})
	if code != 1 || stdout.String() != "" || !strings.Contains(stderr.String(), "boom") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 1, nothing, the node's log", code, stdout.String(), stderr.String())
	}
}
