package export

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/jackc/pgx/v5"
)

// cut says where a connection breaks: after `after` bytes from its start when start is
// set; else `into` bytes into the body of CopyData message number copyData+1, or, when
// into is 0, right after message number copyData (0: before the first).
type cut struct {
	start          bool
	after          int
	copyData, into int
}

var noCut = cut{copyData: -1}

// cutter hands out connections that break as planned, one plan per connection in order;
// connections beyond the plans do not break.
type cutter struct {
	mu    sync.Mutex
	plans []cut
}

var errCut = errors.New("connection cut by the test")

func (c *cutter) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &cutConn{Conn: conn, plan: noCut, cutter: c}, nil
}

// take gives the next plan to a connection that starts a session; pgx also dials to send
// cancel requests (after a broken connection), which get none.
func (c *cutter) take(first []byte) cut {
	if len(first) >= 8 && binary.BigEndian.Uint32(first[4:8]) == 80877102 { // CancelRequest code
		return noCut
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.plans) == 0 {
		return noCut
	}
	plan := c.plans[0]
	c.plans = c.plans[1:]
	return plan
}

// cutConn follows the backend protocol (a type byte, a length, a body) in what it reads
// to break at a message boundary or inside a message.
type cutConn struct {
	net.Conn
	cutter *cutter
	wrote  bool
	plan   cut
	read   int
	hdr    [5]byte
	hdrN   int
	body   int // bytes of the current body still to come
	pos    int // bytes of the current body read
	copies int // CopyData messages complete
	broken bool
}

func (c *cutConn) Write(p []byte) (int, error) {
	if !c.wrote {
		c.wrote, c.plan = true, c.cutter.take(p)
	}
	return c.Conn.Write(p)
}

func (c *cutConn) Read(p []byte) (int, error) {
	if c.broken {
		return 0, errCut
	}
	n, err := c.Conn.Read(p)
	for i := range n {
		if c.cutHere() {
			c.broken = true
			c.Conn.Close()
			return i, nil
		}
		c.step(p[i])
	}
	if c.cutHere() {
		c.broken = true
		c.Conn.Close()
	}
	return n, err
}

func (c *cutConn) cutHere() bool {
	switch {
	case c.plan.copyData < 0 && !c.plan.start:
		return false
	case c.plan.start:
		return c.read == c.plan.after
	case c.plan.into == 0:
		return c.copies == c.plan.copyData && c.hdrN == 0 && c.copies > 0 ||
			c.plan.copyData == 0 && c.hdrN == 5 && c.hdr[0] == 'd'
	}
	return c.copies == c.plan.copyData && c.hdrN == 5 && c.hdr[0] == 'd' && c.pos == c.plan.into
}

func (c *cutConn) step(b byte) {
	c.read++
	if c.hdrN < 5 {
		c.hdr[c.hdrN] = b
		c.hdrN++
		if c.hdrN == 5 {
			c.body, c.pos = int(binary.BigEndian.Uint32(c.hdr[1:]))-4, 0
			if c.body == 0 {
				c.hdrN = 0
			}
		}
		return
	}
	c.body--
	c.pos++
	if c.body == 0 {
		if c.hdr[0] == 'd' {
			c.copies++
		}
		c.hdrN = 0
	}
}

// TestResumedExportIsByteIdentical breaks the connection of every table at chosen places
// — during authentication, inside the header, right after it, between rows, inside a row,
// after a row whose text key needs quoting and un-neutralising — and expects the very
// files an unbroken export writes.
func TestResumedExportIsByteIdentical(t *testing.T) {
	ctx := context.Background()
	store, err := resultsdb.Open(ctx, testpg.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	run := seedRun(t, store, 5000)
	want := t.TempDir()
	ref, err := Export(ctx, store, run.ID, want, nil)
	if err != nil {
		t.Fatal(err)
	}

	c := &cutter{plans: []cut{
		// runs
		{copyData: 0, into: 3}, noCut,
		// variants, requests
		noCut, noCut,
		// steps, in key order "-v", "=HYPERLINK(…)", "two\nlines, \"quoted\"", "x plain": after
		// the header and a row, then after one row at a time, so that the keys to resume
		// after are neutralised, hold quotes, and hold a newline
		{copyData: 2}, {copyData: 1, into: 1}, {copyData: 1}, noCut,
		// step_metrics, step_app_metrics, step_series
		noCut, noCut, noCut,
		// workers: right after the header
		{copyData: 1}, noCut,
		// worker_steps: before the first CopyData (the header never comes)
		{copyData: 0}, noCut,
		// samples: during authentication, then inside rows twice
		{start: true, after: 40}, {copyData: 1000, into: 7}, {copyData: 7001, into: 50}, noCut,
		// container_metrics, db_connections, router_log_pulls, router_requests (a uuid key)
		{copyData: 10}, noCut, noCut, noCut, {copyData: 50, into: 3}, noCut,
	}}
	cfg := store.Pool().Config().ConnConfig.Copy()
	cfg.DialFunc = c.dial
	got := t.TempDir()
	m, err := ExportWith(ctx, store, run.ID, got, Options{Backoff: time.Millisecond,
		Connect: func(ctx context.Context) (*pgx.Conn, error) { return pgx.ConnectConfig(ctx, cfg.Copy()) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.plans) != 0 {
		t.Fatalf("%d planned cuts were not used: the export opened fewer connections than planned", len(c.plans))
	}
	wantResumed := map[string]int{"runs": 1, "steps": 3, "workers": 1, "worker_steps": 1, "samples": 3, "container_metrics": 1, "router_requests": 1}
	for i, f := range m.Files {
		if f.Resumed != wantResumed[f.Table] {
			t.Errorf("%s resumed %d times, want %d", f.Table, f.Resumed, wantResumed[f.Table])
		}
		r := ref.Files[i]
		a, _ := os.ReadFile(filepath.Join(want, f.Name))
		b, _ := os.ReadFile(filepath.Join(got, f.Name))
		if !bytes.Equal(a, b) || f.SHA256 != r.SHA256 || f.Rows != r.Rows || f.Bytes != r.Bytes {
			t.Errorf("%s: resumed export (%d rows, %d bytes) differs from the unbroken one (%d rows, %d bytes)", f.Name, f.Rows, len(b), r.Rows, len(a))
		}
	}
}

// TestExportGivesUpWithoutProgress: a connection that always breaks before the data ends
// the export with an error after MaxAttempts, and leaves no file behind.
func TestExportGivesUpWithoutProgress(t *testing.T) {
	ctx := context.Background()
	store, err := resultsdb.Open(ctx, testpg.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	run := seedRun(t, store, 10)
	c := &cutter{plans: slices.Repeat([]cut{{copyData: 0}}, 10)}
	cfg := store.Pool().Config().ConnConfig.Copy()
	cfg.DialFunc = c.dial
	dir := t.TempDir()
	_, err = ExportWith(ctx, store, run.ID, dir, Options{MaxAttempts: 3, Backoff: time.Millisecond,
		Connect: func(ctx context.Context) (*pgx.Conn, error) { return pgx.ConnectConfig(ctx, cfg.Copy()) }})
	if attempts := 10 - len(c.plans); err == nil || !errors.Is(err, errCut) || attempts != 3 {
		t.Fatalf("export: %v after %d attempts; want the cut after 3", err, attempts)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("a failed export left %d files", len(entries))
	}
}
