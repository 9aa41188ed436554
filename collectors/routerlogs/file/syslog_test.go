package file

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs"
	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/rfc5424"
	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/routerlogstest"
)

// TestSyslogFramedLines reads what a syslog drain received, saved one message a line
// (an HTTPS drain) or with each message's octet count (a TCP drain's stream): router
// messages are entries, the apps' own messages are passed over, not counted as bad.
func TestSyslogFramedLines(t *testing.T) {
	for _, counted := range []bool{false, true} {
		t.Run(fmt.Sprintf("octet-counted=%v", counted), func(t *testing.T) {
			d := routerlogstest.Generate(2000, 7)
			var b strings.Builder
			for i, r := range d.Requests {
				m := rfc5424.Message{Priority: rfc5424.PriorityOut, Timestamp: r.Emitted, Hostname: "acme.prod." + r.App,
					AppName: r.AppGUID, ProcID: rfc5424.ProcID("RTR", fmt.Sprint(i%3)),
					StructuredData: []byte(`[tags@47450 source_type="RTR"]`), Msg: []byte(r.Line)}
				write(&b, &m, counted)
				if i%150 == 0 {
					app := rfc5424.Message{Priority: rfc5424.PriorityErr, Timestamp: r.Emitted, Hostname: "acme.prod." + r.App,
						AppName: r.AppGUID, ProcID: rfc5424.ProcID("APP/PROC/WEB", "0"), Msg: []byte("GET /items 200")}
					write(&b, &app, counted)
				}
			}
			path := filepath.Join(t.TempDir(), "drain.log")
			if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			routerlogstest.InterruptAndResume(t, d, func(t *testing.T) routerlogs.Source {
				s, err := New(path, d.Apps)
				if err != nil {
					t.Fatal(err)
				}
				s.pageLines = 97
				return s
			}, []int{2, 3}, nil)
		})
	}
}

func write(b *strings.Builder, m *rfc5424.Message, counted bool) {
	msg := rfc5424.Append(nil, m)
	if counted {
		msg = rfc5424.AppendFrame(nil, msg)
	}
	b.Write(msg)
}
