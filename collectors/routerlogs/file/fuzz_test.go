package file

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs"
)

// FuzzPull reads arbitrary files: no panic, every line consumed once (a pull resumed
// from its last cursor finds nothing more), counts that add up.
func FuzzPull(f *testing.F) {
	f.Add([]byte("Retrieving logs for app shop in org o / space s as u...\n\n   2024-03-18T23:59:59.00+0000 [RTR/0] OUT x\n   2024-03-18T23:59:59.00+0000 [APP/PROC/WEB/0] OUT y\nno newline"))
	f.Add([]byte(`shop.example.com - [2024-03-18T23:59:59.000000000Z] "GET / HTTP/1.1" 200 0 1 "-" "-" "1.2.3.4:5" "6.7.8.9:10" x_forwarded_for:"-" x_forwarded_proto:"-" vcap_request_id:"v" response_time:0.1 gorouter_time:0.01 app_id:"g" app_index:"0"` + "\r\n\r\n"))
	f.Fuzz(func(t *testing.T, content []byte) {
		path := filepath.Join(t.TempDir(), "f.log")
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := New(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		s.pageLines = 2
		var n int64
		var last routerlogs.Cursor
		res, err := s.Pull(context.Background(), routerlogs.Query{}, routerlogs.Cursor{}, routerlogs.Budget{}, func(b routerlogs.Batch) error {
			n += int64(len(b.Entries) + b.Unparseable)
			last = b.Next
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if n != res.Retrieved {
			t.Fatalf("emitted %d, retrieved %d", n, res.Retrieved)
		}
		res, err = s.Pull(context.Background(), routerlogs.Query{}, last, routerlogs.Budget{}, func(b routerlogs.Batch) error {
			if len(b.Entries)+b.Unparseable > 0 {
				t.Fatalf("resumed pull read again: %+v", b)
			}
			return nil
		})
		if err != nil || res.Retrieved != 0 {
			t.Fatalf("resumed pull: %+v, %v", res, err)
		}
	})
}
