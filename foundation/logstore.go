package foundation

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/accesslog"
	"github.com/cf-benchmark/cf-benchmark/foundation/logship"
)

// LogStoreFile is the log store's file in the state directory (see logStore).
const LogStoreFile = "logstore.log"

// logStore is the local foundation's log store under quota when no Elasticsearch is
// given: of the router's lines, those a hosted store would receive (lines with an app
// id: gorouter sends only those to the app log stream) and its quota admits
// (logship.Quota, Config.LogQuota per LogQuotaWindow), appended to StateDir/logstore.log
// as the access log has them. A run reads it with collectors.router_logs source: file,
// and sees what a user of a hosted store under quota sees: a fraction of the lines, in
// bundles at the start of each window. The access log itself stays complete, as the
// router's own file is. Write never fails: the access log must keep its lines.
type logStore struct {
	mu     sync.Mutex
	w      io.WriteCloser
	quota  logship.Quota
	clock  func() time.Time
	log    *slog.Logger
	closed bool
	stats  logship.Stats // Received, Shipped, DroppedQuota, Unparseable, NoApp, Failed
}

var _ io.Writer = (*logStore)(nil)

// openLogStore opens (appends to) the store at path with quota q; log (nil: none)
// receives write failures.
func openLogStore(path string, q logship.Quota, log *slog.Logger) (*logStore, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("log store: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &logStore{w: f, quota: q, clock: time.Now, log: log}, nil
}

// Write takes one or more newline-terminated access-log lines; it always reports p as
// written (what became of each line is in Stats).
func (s *logStore) Write(p []byte) (int, error) {
	at := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	for rest := p; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i+1], rest[i+1:]
		} else {
			rest = nil
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		s.stats.Received++
		rec, err := accesslog.ParseGorouter(bytes.TrimRight(line, "\r\n"))
		switch {
		case err != nil:
			s.stats.Unparseable++
			continue
		case rec.AppID == "":
			s.stats.NoApp++
			continue
		case s.closed:
			s.stats.DroppedBuffer++
			continue
		case !s.quota.Admit(at):
			s.stats.DroppedQuota++
			continue
		}
		if line[len(line)-1] != '\n' {
			line = append(line[:len(line):len(line)], '\n')
		}
		if _, err := s.w.Write(line); err != nil {
			s.stats.Failed++
			s.log.Warn("log store: write a line", "err", err)
			continue
		}
		s.stats.Shipped++
	}
	return len(p), nil
}

// Stats counts what became of the lines written so far (Shipped: kept in the store).
func (s *logStore) Stats() logship.Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Close closes the file; lines written after it are dropped and counted.
func (s *logStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.w.Close()
}
