package relay

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// submission is one post of samples waiting for a COPY.
type submission struct {
	rows []byte
	n    int
	done chan error
}

// samples takes one instance's batch, waits until a COPY stored it and answers.
func (s *Server) samples(w http.ResponseWriter, r *http.Request) {
	id, err := workerID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	// Read into one buffer of the announced size (bounded by the handler's limit) rather
	// than one that doubles as it fills.
	buf := bytes.NewBuffer(make([]byte, 0, min(max(r.ContentLength, 0), s.cfg.MaxBody)+bytes.MinRead))
	if _, err := buf.ReadFrom(r.Body); err != nil {
		s.fail(w, r, fmt.Errorf("%w: read samples: %w", errBadRequest, err))
		return
	}
	body := buf.Bytes()
	rows, n, err := resultsdb.ParseCopy(body, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if n == 0 {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	s.samplePosts.Add(1)
	sub := &submission{rows: rows, n: n, done: make(chan error, 1)}
	s.subMu.Lock()
	s.subs = append(s.subs, sub)
	s.subMu.Unlock()
	select {
	case s.subKick <- struct{}{}:
	default:
	}
	select {
	case err = <-sub.done:
	case <-r.Context().Done():
		// The instance gave up; its rows may still be stored, and a retry of them is
		// deduplicated by the COPY's fallback.
		return
	}
	s.done(w, r, err)
}

// commit stores what was posted, one COPY of everything waiting at a time: while a
// COPY runs, the next one fills, so the database sees a few large COPYs a second
// instead of one per instance and flush, with no timer adding latency.
func (s *Server) commit(ctx context.Context) {
	for {
		batch := s.take()
		if len(batch) == 0 {
			select {
			case <-ctx.Done(): // after the server's shutdown: no post is waiting
				return
			case <-s.subKick:
				continue
			}
		}
		s.store(ctx, batch)
	}
}

// take removes up to MaxBatchBytes of waiting submissions (at least one).
func (s *Server) take() []*submission {
	s.subMu.Lock()
	defer s.subMu.Unlock()
	size, k := 0, 0
	for k < len(s.subs) && (k == 0 || size+len(s.subs[k].rows) <= s.cfg.MaxBatchBytes) {
		size += len(s.subs[k].rows)
		k++
	}
	batch := s.subs[:k:k]
	s.subs = s.subs[k:]
	if len(s.subs) > 0 {
		select { // another committer may take the rest at once
		case s.subKick <- struct{}{}:
		default:
		}
	}
	return batch
}

// store copies batch in one COPY and tells each submission how it went. When the
// database refuses the batch for a reason other than being away, each submission is
// tried alone, so that one instance's bad rows fail only that instance.
func (s *Server) store(ctx context.Context, batch []*submission) {
	parts, rows := make([][]byte, len(batch)), 0
	for i, b := range batch {
		parts[i], rows = b.rows, rows+b.n
	}
	// The instances wait for this answer; their own timeouts bound it.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	err := s.cfg.Store.CopyRows(cctx, parts)
	cancel()
	s.copies.Add(1)
	if err == nil {
		s.copiedRows.Add(int64(rows))
	}
	if err != nil && !s.cfg.Store.Retryable(ctx, err) && len(batch) > 1 {
		for _, b := range batch {
			s.store(ctx, []*submission{b})
		}
		return
	}
	if err != nil {
		s.cfg.Logger.Warn("store samples", "rows", rows, "instances", len(batch), "err", err)
	}
	for _, b := range batch {
		b.done <- err
	}
}
