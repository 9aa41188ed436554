package foundation

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/foundation/logship"
)

// TestLogStore: the store keeps the app lines its quota admits, in bundles at the start
// of each clock-aligned window, skips what a hosted store never receives, and counts
// every line; the access log it sits beside is not its business.
func TestLogStore(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), LogStoreFile)
	s, err := openLogStore(path, logship.Quota{Limit: 2, Window: 5 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) // a window start
	now := t0
	s.clock = func() time.Time { return now }
	line := func(n int) string {
		return `app.example.com - [2026-01-02T03:04:05.000000000Z] "GET /` + string(rune('a'+n)) + ` HTTP/1.1" 200 0 2 "-" "-" "127.0.0.1:1" "127.0.0.1:2" x_forwarded_for:"-" x_forwarded_proto:"http" vcap_request_id:"-" response_time:0.001 gorouter_time:0.0001 app_id:"6f3c" app_index:"0" instance_id:"-" x_cf_routererror:"-"` + "\n"
	}
	noApp := `ghost.example.com - [2026-01-02T03:04:05Z] "GET / HTTP/1.1" 404 0 67 "-" "-" "-" "-" x_forwarded_for:"-" x_forwarded_proto:"-" vcap_request_id:"-" response_time:0.000190 gorouter_time:0.000190 app_id:"-" app_index:"-" instance_id:"-" x_cf_routererror:"unknown_route"` + "\n"
	write := func(at time.Duration, text string) {
		now = t0.Add(at)
		if n, err := s.Write([]byte(text)); n != len(text) || err != nil {
			t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(text))
		}
	}
	write(0, line(0)+noApp)            // kept; no app id: not received by a store
	write(time.Second, "not a line\n") // unparseable
	write(2*time.Second, line(1)+line(2))
	write(4*time.Second, line(3))
	write(5*time.Second, strings.TrimSuffix(line(4), "\n")) // a new window; a newline is added
	write(6*time.Second, line(5))
	write(7*time.Second, line(6))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	write(8*time.Second, line(7))

	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := line(0) + line(1) + line(4) + line(5); string(b) != want {
		t.Errorf("the store holds\n%s\nwant\n%s", b, want)
	}
	st := s.Stats()
	want := logship.Stats{Received: 10, Shipped: 4, DroppedQuota: 3, Unparseable: 1, NoApp: 1, DroppedBuffer: 1}
	if st != want {
		t.Errorf("stats %+v, want %+v", st, want)
	}
}
