package resultsdb

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cf-benchmark/cf-benchmark/sample"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// WriterOptions tune a SampleWriter; the zero value gives the defaults.
type WriterOptions struct {
	// FlushEvery is the longest a sample waits in memory before a COPY (default 1 s).
	FlushEvery time.Duration
	// BatchSize triggers an early flush when this many samples are buffered (default 32768).
	BatchSize int
	// MaxBuffered bounds memory: beyond it new samples are dropped and counted
	// (default 4 Mi samples, 128 MiB).
	MaxBuffered int
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
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// SampleWriter streams one worker's samples into the samples table with binary COPY in
// batches. Add is safe for concurrent use and never waits for the database: when the
// database is slow or down, samples stay buffered up to MaxBuffered, and beyond that are
// dropped and counted (see Dropped). Lifecycle: Start, then Add from any goroutine, then
// Close, which flushes what is left.
type SampleWriter struct {
	store  *Store
	worker int32
	opts   WriterOptions

	mu      sync.Mutex
	buf     []sample.Sample // filled by Add
	pending []sample.Sample // taken by the flusher, written or being retried

	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	flushMu sync.Mutex // one COPY at a time
	enc     bytes.Buffer

	written atomic.Uint64
	dropped atomic.Uint64
}

// NewSampleWriter returns a writer for the samples of worker.
func (s *Store) NewSampleWriter(worker int32, opts WriterOptions) *SampleWriter {
	opts.defaults()
	return &SampleWriter{
		store: s, worker: worker, opts: opts,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
}

// Start runs the background flusher until Close. ctx bounds each COPY.
func (w *SampleWriter) Start(ctx context.Context) {
	go func() {
		defer close(w.done)
		t := time.NewTicker(w.opts.FlushEvery)
		defer t.Stop()
		backoff := time.Duration(0)
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
			case <-w.kick:
			}
			if backoff > 0 {
				select {
				case <-w.stop:
					return
				case <-time.After(backoff):
				}
			}
			if err := w.Flush(ctx); err != nil {
				backoff = min(max(2*backoff, 100*time.Millisecond), 5*time.Second)
				w.opts.Logger.Warn("write samples failed; keeping them buffered", "worker", w.worker, "buffered", w.Buffered(), "retry_in", backoff, "err", err)
				continue
			}
			backoff = 0
		}
	}()
}

// Add buffers one sample. It never blocks on the database.
func (w *SampleWriter) Add(s sample.Sample) {
	w.mu.Lock()
	if len(w.buf)+len(w.pending) >= w.opts.MaxBuffered {
		w.mu.Unlock()
		w.dropped.Add(1)
		return
	}
	w.buf = append(w.buf, s)
	full := len(w.buf) == w.opts.BatchSize
	w.mu.Unlock()
	if full {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
}

// Flush writes every sample buffered so far and returns when they are stored or the
// write failed (then they stay buffered for the next attempt).
func (w *SampleWriter) Flush(ctx context.Context) error {
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	w.mu.Lock()
	if len(w.pending) == 0 {
		w.pending, w.buf = w.buf, w.pending[:0]
	} else {
		w.pending = append(w.pending, w.buf...)
		w.buf = w.buf[:0]
	}
	batch := w.pending
	w.mu.Unlock()
	for len(batch) > 0 {
		n := min(len(batch), w.opts.BatchSize)
		if err := w.copy(ctx, batch[:n]); err != nil {
			w.mu.Lock()
			w.pending = append(w.pending[:0], batch...)
			w.mu.Unlock()
			return err
		}
		w.written.Add(uint64(n))
		batch = batch[n:]
	}
	w.mu.Lock()
	w.pending = w.pending[:0]
	w.mu.Unlock()
	return nil
}

// Close stops the flusher and writes what is left; the error says what could not be.
func (w *SampleWriter) Close(ctx context.Context) error {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
	return w.Flush(ctx)
}

// Written is the number of samples stored so far.
func (w *SampleWriter) Written() uint64 { return w.written.Load() }

// Dropped is the number of samples lost because the buffer was full.
func (w *SampleWriter) Dropped() uint64 { return w.dropped.Load() }

// Buffered is the number of samples waiting to be written.
func (w *SampleWriter) Buffered() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.buf) + len(w.pending)
}

const sampleColumns = "worker_id, seq, step, request, intended_us, start_delay_us, latency_us, status, bytes, error, warmup"

// copy writes one batch. A batch that was partly stored before a lost connection would
// fail the primary key on retry; then it goes through a staging table and only the
// missing rows are inserted, so a retry never duplicates and never loses.
func (w *SampleWriter) copy(ctx context.Context, batch []sample.Sample) error {
	w.enc.Reset()
	encodeSamples(&w.enc, w.worker, batch)
	conn, err := w.store.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("copy samples: %w", err)
	}
	defer conn.Release()
	_, err = conn.Conn().PgConn().CopyFrom(ctx, bytes.NewReader(w.enc.Bytes()), "COPY samples ("+sampleColumns+") FROM STDIN (FORMAT binary)")
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" {
		if err != nil {
			return fmt.Errorf("copy samples: %w", err)
		}
		return nil
	}
	return pgx.BeginFunc(ctx, conn.Conn(), func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TEMP TABLE samples_retry (LIKE samples) ON COMMIT DROP`); err != nil {
			return err
		}
		if _, err := tx.Conn().PgConn().CopyFrom(ctx, bytes.NewReader(w.enc.Bytes()), "COPY samples_retry ("+sampleColumns+") FROM STDIN (FORMAT binary)"); err != nil {
			return fmt.Errorf("copy samples (retry): %w", err)
		}
		_, err := tx.Exec(ctx, `INSERT INTO samples SELECT * FROM samples_retry ON CONFLICT DO NOTHING`)
		return err
	})
}

// encodeSamples writes batch in PostgreSQL's binary COPY format: no per-value
// allocations, about 90 bytes per row on the wire.
func encodeSamples(b *bytes.Buffer, worker int32, batch []sample.Sample) {
	b.Grow(19 + len(batch)*93 + 2)
	b.WriteString("PGCOPY\n\xff\r\n\x00")
	b.Write([]byte{0, 0, 0, 0, 0, 0, 0, 0}) // flags, header extension length
	var row [93]byte
	for i := range batch {
		s := &batch[i]
		p := row[:0]
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
			p = append(p, 1)
		} else {
			p = append(p, 0)
		}
		b.Write(p)
	}
	b.Write([]byte{0xff, 0xff})
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
