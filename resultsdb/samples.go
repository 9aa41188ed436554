package resultsdb

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/backoff"
	"github.com/cf-benchmark/cf-benchmark/internal/sample"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// WriterOptions tune a SampleWriter; the zero value gives the defaults.
type WriterOptions struct {
	// FlushEvery is the longest a sample waits in memory before a COPY (default 1 s).
	FlushEvery time.Duration
	// BatchSize triggers an early flush when this many samples are buffered (default 32768).
	BatchSize int
	// MaxBuffered bounds memory, in samples of 32 bytes (default 4 Mi samples, 128 MiB).
	MaxBuffered int
	// SpillPath, when set, is a file that takes the samples the database cannot take
	// (while it is down or slow), up to MaxSpillBytes; they are written from there when
	// it recovers. Without it, samples wait in memory.
	SpillPath string
	// MaxSpillBytes bounds the spill file (default 256 MiB, 8 Mi samples).
	MaxSpillBytes int64
	// AttemptTimeout bounds one background write attempt (default 15 s).
	AttemptTimeout time.Duration
	// Logger receives flush failures; nil discards them.
	Logger *slog.Logger
}

func (o *WriterOptions) defaults() {
	if o.FlushEvery <= 0 {
		o.FlushEvery = time.Second
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 32 << 10
	}
	if o.MaxBuffered <= 0 {
		o.MaxBuffered = 4 << 20
	}
	if o.MaxSpillBytes <= 0 {
		o.MaxSpillBytes = 256 << 20
	}
	if o.AttemptTimeout <= 0 {
		o.AttemptTimeout = 15 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// SampleWriter streams one worker's samples into the samples table with binary COPY in
// batches. Add is safe for concurrent use and never waits for the database. When the
// database is slow or down, samples go to the spill file (if configured), then stay in
// memory up to MaxBuffered, and only beyond that are dropped and counted (Dropped):
// never silently. Lifecycle: Start, then Add from any goroutine, then Close, which
// flushes what is left.
type SampleWriter struct {
	sink   SampleSink
	worker int32
	opts   WriterOptions

	mu  sync.Mutex
	buf queue // filled by Add

	pending    queue        // taken from buf by a flush; guarded by flushMu
	pendingLen atomic.Int64 // pending.Len(), for Add's bound

	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	flushMu sync.Mutex // one flush at a time; guards pending and spill
	spill   *spillFile

	written atomic.Uint64
	spilled atomic.Uint64
	dropped atomic.Uint64
}

// SampleSink stores one batch of a worker's samples: all of them or none. A batch may
// be given again after an error (its answer lost in an outage) and must then be stored
// once. Calls come from one goroutine per writer; a sink serves many writers.
type SampleSink interface {
	CopySamples(ctx context.Context, worker int32, batch [][]sample.Sample) error
}

var _ SampleSink = (*Store)(nil)

// NewSampleWriter returns a writer that stores the samples of worker straight into s.
// It fails only when the spill file cannot be created.
func (s *Store) NewSampleWriter(worker int32, opts WriterOptions) (*SampleWriter, error) {
	return NewSampleWriter(s, worker, opts)
}

// NewSampleWriter returns a writer for the samples of worker that stores them through
// sink (a Store, or a relay's client). It fails only when the spill file cannot be
// created.
func NewSampleWriter(sink SampleSink, worker int32, opts WriterOptions) (*SampleWriter, error) {
	opts.defaults()
	w := &SampleWriter{
		sink: sink, worker: worker, opts: opts,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
	if opts.SpillPath != "" {
		f, err := openSpill(opts.SpillPath, opts.MaxSpillBytes)
		if err != nil {
			return nil, err
		}
		w.spill = f
	}
	return w, nil
}

// Start runs the background flusher until Close. ctx bounds it.
func (w *SampleWriter) Start(ctx context.Context) {
	go func() {
		defer close(w.done)
		t := time.NewTicker(w.opts.FlushEvery)
		defer t.Stop()
		// After a failure the database rests, with backoff, while memory moves to disk.
		retry := backoff.Backoff{First: 100 * time.Millisecond, Max: 5 * time.Second}
		var retryAt time.Time
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
			case <-w.kick:
			}
			if time.Now().Before(retryAt) {
				// The database failed a moment ago: move what is in memory to disk
				// instead of hammering it.
				w.flushMu.Lock()
				w.takeBuffer()
				w.spillPending()
				w.flushMu.Unlock()
				continue
			}
			attempt, cancel := context.WithTimeout(ctx, w.opts.AttemptTimeout)
			err := w.Flush(attempt)
			cancel()
			if err != nil {
				delay := retry.Next()
				retryAt = time.Now().Add(delay)
				w.opts.Logger.Warn("write samples failed; keeping them", "worker", w.worker,
					"in_memory", w.Buffered(), "spilled", w.Spilled(), "retry_in", delay, "err", err)
				continue
			}
			retry.Reset()
		}
	}()
}

// Add buffers one sample. It never blocks on the database.
func (w *SampleWriter) Add(s sample.Sample) {
	w.mu.Lock()
	if w.buf.Len()+int(w.pendingLen.Load()) >= w.opts.MaxBuffered {
		w.mu.Unlock()
		w.dropped.Add(1)
		return
	}
	w.buf.Push(s)
	full := w.buf.Len() == w.opts.BatchSize
	w.mu.Unlock()
	if full {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
}

// takeBuffer moves what Add buffered to pending. Callers hold flushMu.
func (w *SampleWriter) takeBuffer() {
	w.mu.Lock()
	w.pending.MoveFrom(&w.buf)
	w.pendingLen.Store(int64(w.pending.Len()))
	w.mu.Unlock()
}

// dropPending removes the first n pending samples. Callers hold flushMu.
func (w *SampleWriter) dropPending(n int) {
	w.pending.Drop(n)
	w.pendingLen.Store(int64(w.pending.Len()))
}

// spillPending moves as much of pending to the spill file as fits; the rest stays in
// memory. Callers hold flushMu.
func (w *SampleWriter) spillPending() {
	if w.spill == nil || w.pending.Len() == 0 {
		return
	}
	n := min(w.pending.Len(), w.spill.Room())
	if n == 0 {
		return
	}
	if err := w.spill.Append(w.pending.Front(n)); err != nil {
		w.opts.Logger.Warn("spill samples to disk failed; keeping them in memory", "worker", w.worker, "err", err)
		return
	}
	w.spilled.Add(uint64(n))
	w.dropPending(n)
}

// Flush writes every sample buffered or spilled so far, oldest first, and returns when
// they are stored or a write failed (then they stay in the spill file or in memory for
// the next attempt).
func (w *SampleWriter) Flush(ctx context.Context) error {
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	w.takeBuffer()
	for w.spill != nil && w.spill.Len() > 0 {
		batch, err := w.spill.Peek(w.opts.BatchSize)
		if err == nil {
			err = w.sink.CopySamples(ctx, w.worker, [][]sample.Sample{batch})
		}
		if err != nil {
			w.spillPending()
			return err
		}
		w.written.Add(uint64(len(batch)))
		if err := w.spill.Consume(len(batch)); err != nil {
			return err
		}
	}
	for w.pending.Len() > 0 {
		n := min(w.pending.Len(), w.opts.BatchSize)
		if err := w.sink.CopySamples(ctx, w.worker, w.pending.Front(n)); err != nil {
			w.spillPending()
			return err
		}
		w.written.Add(uint64(n))
		w.dropPending(n)
	}
	return nil
}

// Close stops the flusher and writes what is left. The error says how many samples
// could not be stored; the spill file is closed, and removed only when none are left
// in it.
func (w *SampleWriter) Close(ctx context.Context) error {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
	err := w.Flush(ctx)
	var closeErr error
	if w.spill != nil {
		closeErr = w.spill.Close()
	}
	if err != nil {
		where := ""
		if w.spill != nil && w.spill.Len() > 0 {
			where = fmt.Sprintf(", %d of them in %s", w.spill.Len(), w.spill.f.Name())
		}
		return fmt.Errorf("%d samples not stored%s: %w", w.Unstored(), where, err)
	}
	return closeErr
}

// Written is the number of samples stored so far.
func (w *SampleWriter) Written() uint64 { return w.written.Load() }

// Spilled is the number of samples that went through the spill file.
func (w *SampleWriter) Spilled() uint64 { return w.spilled.Load() }

// Dropped is the number of samples lost because memory and spill file were full.
func (w *SampleWriter) Dropped() uint64 { return w.dropped.Load() }

// Buffered is the number of samples waiting in memory.
func (w *SampleWriter) Buffered() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Len() + int(w.pendingLen.Load())
}

// Unstored is the number of samples waiting in memory or in the spill file.
func (w *SampleWriter) Unstored() int {
	n := w.Buffered()
	w.flushMu.Lock()
	if w.spill != nil {
		n += w.spill.Len()
	}
	w.flushMu.Unlock()
	return n
}

const sampleColumns = "worker_id, seq, step, request, intended_us, start_delay_us, latency_us, status, bytes, error, warmup"

// CopySamples writes one batch of worker's samples with binary COPY (SampleSink).
func (s *Store) CopySamples(ctx context.Context, worker int32, batch [][]sample.Sample) error {
	return s.copyStream(ctx, func() io.Reader { return newCopyReader(worker, batch) })
}

// copyStream writes the samples src streams in binary COPY format (src gives the
// stream afresh on each call). A batch that was partly stored before a lost connection
// would fail the primary key on retry; then it goes through a staging table and only
// the missing rows are inserted, so a retry never duplicates and never loses.
func (s *Store) copyStream(ctx context.Context, src func() io.Reader) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("copy samples: %w", err)
	}
	defer conn.Release()
	_, err = conn.Conn().PgConn().CopyFrom(ctx, src(), "COPY samples ("+sampleColumns+") FROM STDIN (FORMAT binary)")
	// A duplicate is 23505 from one server but an internal error (XX000) from a Citus
	// shard: any error the server answered with takes the deduplicating path, which
	// fails again, with the same error, when it was not a duplicate.
	var pgErr *pgconn.PgError
	if err == nil || !errors.As(err, &pgErr) || Transient(err) {
		if err != nil {
			return fmt.Errorf("copy samples: %w", err)
		}
		return nil
	}
	return pgx.BeginFunc(ctx, conn.Conn(), func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TEMP TABLE samples_retry (LIKE samples) ON COMMIT DROP`); err != nil {
			return err
		}
		if _, err := tx.Conn().PgConn().CopyFrom(ctx, src(), "COPY samples_retry ("+sampleColumns+") FROM STDIN (FORMAT binary)"); err != nil {
			return fmt.Errorf("copy samples (retry): %w", err)
		}
		_, err := tx.Exec(ctx, `INSERT INTO samples SELECT * FROM samples_retry ON CONFLICT DO NOTHING`)
		return err
	})
}

// copyReader streams the samples of segs in PostgreSQL's binary COPY format, encoding
// a few hundred rows at a time as the connection asks for them: no per-value
// allocations, 93 bytes per row on the wire, and no multi-megabyte encode that would
// keep a generator's other goroutines off the CPU (with GOMAXPROCS=1, until preemption).
type copyReader struct {
	worker int32
	segs   [][]sample.Sample
	seg    int // next row is segs[seg][row]
	row    int
	buf    []byte
	off    int
	state  int // 0 header pending, 1 rows, 2 trailer written
}

func newCopyReader(worker int32, segs [][]sample.Sample) *copyReader {
	return &copyReader{worker: worker, segs: segs, buf: make([]byte, 0, 256*93)}
}

func (r *copyReader) Read(p []byte) (int, error) {
	if r.off == len(r.buf) {
		if !r.fill() {
			return 0, io.EOF
		}
	}
	n := copy(p, r.buf[r.off:])
	r.off += n
	return n, nil
}

// fill encodes the next chunk into buf; false when everything was read.
func (r *copyReader) fill() bool {
	r.buf, r.off = r.buf[:0], 0
	switch r.state {
	case 0:
		r.buf = append(r.buf, "PGCOPY\n\xff\r\n\x00"...)
		r.buf = append(r.buf, 0, 0, 0, 0, 0, 0, 0, 0) // flags, header extension length
		r.state = 1
		return true
	case 2:
		return false
	}
	for len(r.buf)+93 <= cap(r.buf) && r.seg < len(r.segs) {
		if r.row == len(r.segs[r.seg]) {
			r.seg, r.row = r.seg+1, 0
			continue
		}
		r.buf = appendRow(r.buf, r.worker, &r.segs[r.seg][r.row])
		r.row++
	}
	if r.seg == len(r.segs) {
		r.buf = append(r.buf, 0xff, 0xff)
		r.state = 2
	}
	return true
}

func appendRow(p []byte, worker int32, s *sample.Sample) []byte {
	p = binary.BigEndian.AppendUint16(p, 11)
	p = appendInt4(p, uint32(worker))
	p = appendInt8(p, uint64(s.Seq))
	p = appendInt2(p, uint16(s.Step))
	p = appendInt2(p, uint16(s.Request))
	p = appendInt8(p, uint64(s.IntendedUS))
	p = appendInt4(p, uint32(s.StartDelayUS))
	p = appendInt4(p, uint32(s.LatencyUS))
	p = appendInt2(p, uint16(s.Status))
	p = appendInt4(p, uint32(s.Bytes))
	p = appendInt2(p, uint16(s.Err))
	p = binary.BigEndian.AppendUint32(p, 1)
	if s.Warmup() {
		return append(p, 1)
	}
	return append(p, 0)
}

func appendInt2(p []byte, v uint16) []byte {
	return binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint32(p, 2), v)
}

func appendInt4(p []byte, v uint32) []byte {
	return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(p, 4), v)
}

func appendInt8(p []byte, v uint64) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint32(p, 8), v)
}
