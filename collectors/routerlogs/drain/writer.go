package drain

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/backoff"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// batchRows is the most rows per transaction.
const batchRows = 5000

// buffer holds rows for the writer, at most max of them (those being stored
// included). Safe for concurrent use.
type buffer struct {
	mu       sync.Mutex
	max      int
	pending  []resultsdb.RouterRequest
	inFlight int // rows taken by the writer and not yet stored
	closed   bool
	ready    chan struct{} // a token when rows are pending or the buffer closed
}

func newBuffer(max int) *buffer {
	return &buffer{max: max, ready: make(chan struct{}, 1)}
}

// push adds a row; false when the buffer is full.
func (b *buffer) push(r resultsdb.RouterRequest) bool {
	b.mu.Lock()
	if len(b.pending)+b.inFlight >= b.max {
		b.mu.Unlock()
		return false
	}
	b.pending = append(b.pending, r)
	b.mu.Unlock()
	b.signal()
	return true
}

func (b *buffer) signal() {
	select {
	case b.ready <- struct{}{}:
	default:
	}
}

// take hands every pending row to the writer.
func (b *buffer) take() []resultsdb.RouterRequest {
	b.mu.Lock()
	defer b.mu.Unlock()
	rows := b.pending
	b.pending = nil
	b.inFlight += len(rows)
	return rows
}

// stored releases n rows the writer stored.
func (b *buffer) stored(n int) {
	b.mu.Lock()
	b.inFlight -= n
	b.mu.Unlock()
}

// len is the rows not yet stored.
func (b *buffer) len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.pending) + b.inFlight
}

// close tells the writer that no more rows come.
func (b *buffer) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.signal()
}

func (b *buffer) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed && len(b.pending) == 0
}

// write stores buffered rows and the counters until the buffer is closed and empty, or
// ctx ends; a failed store is retried after the shared backoff. The counters are
// stored at least every second while they change, so that refusals show without rows.
func (r *Receiver) write(ctx context.Context) {
	pull := &resultsdb.LogPull{RunID: r.cfg.RunID, Source: Source, Cursor: json.RawMessage(`{}`)}
	var base Counters // a previous receiver's totals for this run
	b := backoff.Backoff{First: 250 * time.Millisecond, Max: 5 * time.Second}
	for {
		prev, err := r.cfg.Store.LogPull(ctx, r.cfg.RunID, Source)
		if err == nil {
			if prev != nil {
				pull.Stored = prev.Stored
				if len(prev.Counters) > 0 {
					_ = json.Unmarshal(prev.Counters, &base) // a tally we wrote: at worst restart from zero
				}
			}
			break
		}
		r.log.Warn("drain: results database: read the run's drain totals; retrying", "err", err)
		if !b.Wait(ctx) {
			return
		}
		if r.buf.isClosed() && r.buf.len() == 0 {
			return
		}
	}
	b = backoff.Backoff{First: 250 * time.Millisecond, Max: 5 * time.Second}
	var lastJSON string
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	store := func(rows []resultsdb.RouterRequest) bool {
		for {
			c := r.c.snapshot().plus(base)
			pull.Retrieved, pull.Unparseable, pull.Foreign = c.Router, c.Unparseable, c.Foreign
			pull.Counters = c.json()
			err := r.cfg.Store.StoreRouterBatch(ctx, pull, rows)
			if err == nil {
				b.Reset()
				lastJSON = string(pull.Counters)
				return true
			}
			r.log.Warn("drain: results database: store router requests; retrying", "rows", len(rows), "buffered", r.buf.len(), "err", err)
			if !b.Wait(ctx) {
				return false
			}
		}
	}
	for {
		rows := r.buf.take()
		for len(rows) > 0 {
			n := min(len(rows), batchRows)
			if !store(rows[:n]) {
				return
			}
			r.buf.stored(n)
			r.stored.Add(int64(n))
			rows = rows[n:]
		}
		if r.buf.isClosed() {
			if string(r.c.snapshot().plus(base).json()) != lastJSON {
				store(nil)
			}
			return
		}
		select {
		case <-r.buf.ready:
		case <-tick.C:
			if c := r.c.snapshot().plus(base); string(c.json()) != lastJSON {
				if !store(nil) {
					return
				}
			}
		case <-ctx.Done():
			return
		}
	}
}
