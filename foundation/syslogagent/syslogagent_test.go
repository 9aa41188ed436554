package syslogagent

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/accesslog"
	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/rfc5424"
	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle/lifecycletest"
)

const appGUID = "b7e4c2a9-3f1d-4a6e-9c8b-2d5f7e1a0c3b"

func rtrLine(i int) string {
	return fmt.Sprintf(`shop.apps.localhost - [2026-11-24T18:57:01.%06dZ] "GET / HTTP/1.1" 200 0 2 "-" "w" "127.0.0.1:1" "127.0.0.1:2" x_forwarded_for:"-" x_forwarded_proto:"http" vcap_request_id:"id-%d" response_time:0.001 gorouter_time:0.0001 app_id:"%s" app_index:"0"`, i, i, appGUID)
}

// sink collects messages a drain got.
type sink struct {
	mu   sync.Mutex
	msgs []rfc5424.Message
	auth []string
}

func (s *sink) add(b []byte, auth string) error {
	m, err := rfc5424.Parse(b)
	if err != nil {
		return err
	}
	m.Msg = append([]byte(nil), m.Msg...)
	s.mu.Lock()
	s.msgs = append(s.msgs, m)
	s.auth = append(s.auth, auth)
	s.mu.Unlock()
	return nil
}

func (s *sink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.msgs)
}

func httpSink(t *testing.T) (*sink, string) {
	s := &sink{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		user, pass, _ := r.BasicAuth()
		var bad error
		rfc5424.SplitBody(body, func(m []byte) { bad = errors.Join(bad, s.add(m, user+":"+pass)) })
		if bad != nil {
			t.Error(bad)
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s, ln.Addr().String()
}

func tcpSink(t *testing.T) (*sink, string) {
	s := &sink{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				fr := rfc5424.NewFrameReader(c, 0)
				for {
					m, err := fr.Next()
					if err != nil {
						return
					}
					if err := s.add(m, ""); err != nil {
						t.Error(err)
					}
				}
			}()
		}
	}()
	return s, ln.Addr().String()
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestSendsBoundAppsLinesToTheirDrains binds an app to an HTTP and a syslog drain,
// writes router lines and instance output, then unbinds it.
func TestSendsBoundAppsLinesToTheirDrains(t *testing.T) {
	hs, haddr := httpSink(t)
	ts, taddr := tcpSink(t)
	var mu sync.Mutex
	drains := map[string][]string{appGUID: {"http://run:s3cret@" + haddr + "/", "syslog://" + taddr}}
	a := New(Config{Refresh: 20 * time.Millisecond,
		Drains: func() map[string][]string {
			mu.Lock()
			defer mu.Unlock()
			out := map[string][]string{}
			for k, v := range drains {
				out[k] = v
			}
			return out
		},
		App: func(guid string) (App, bool) {
			return App{Org: "cfbench", Space: "apps", Name: "shop"}, guid == appGUID
		}})
	if err := a.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var lines []byte
	for i := range 100 {
		lines = append(lines, rtrLine(i)+"\n"...)
	}
	lines = append(lines, `other.apps.localhost - [2026-11-24T18:57:01Z] "GET / HTTP/1.1" 404 0 2 "-" "w" "127.0.0.1:1" "-" x_forwarded_for:"-" x_forwarded_proto:"http" vcap_request_id:"x" response_time:0.001 app_id:"-"`+"\n"...)
	a.Write(lines)
	a.Line(appGUID, "APP/PROC/WEB", "1", []byte("listening on 8080"), time.Now())
	a.Line("someone-else", "APP/PROC/WEB", "0", []byte("not bound"), time.Now())
	waitFor(t, "101 messages at each drain", func() bool { return hs.count() == 101 && ts.count() == 101 })

	for _, s := range []*sink{hs, ts} {
		for i, m := range s.msgs {
			if m.Hostname != "cfbench.apps.shop" || m.AppName != appGUID || m.Priority != rfc5424.PriorityOut || m.Timestamp.IsZero() {
				t.Fatalf("message %d header %+v", i, m)
			}
			if i < 100 {
				rec, err := accesslog.ParseGorouter(m.Msg)
				if err != nil || m.ProcID != "[RTR/0]" || rec.VcapRequestID != fmt.Sprintf("id-%d", i) {
					t.Fatalf("message %d: %s %q (%v)", i, m.ProcID, m.Msg, err)
				}
			} else if m.ProcID != "[APP/PROC/WEB/1]" || string(m.Msg) != "listening on 8080" {
				t.Fatalf("app message %s %q", m.ProcID, m.Msg)
			}
		}
	}
	if hs.auth[0] != "run:s3cret" {
		t.Errorf("basic auth %q, want the drain URL's user info", hs.auth[0])
	}

	// Unbound: no more lines.
	mu.Lock()
	drains = map[string][]string{}
	mu.Unlock()
	a.refresh()
	a.Write([]byte(rtrLine(500) + "\n"))
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if hs.count() != 101 || ts.count() != 101 {
		t.Errorf("after unbinding: %d and %d messages, want 101", hs.count(), ts.count())
	}
	if st := a.Stats(); st.Sent != 202 || st.Dropped != 0 || st.Failed != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestLifecycle(t *testing.T) {
	lifecycletest.Run(t, func(t *testing.T) lifecycletest.Subject {
		return lifecycletest.Subject{Part: New(Config{Drains: func() map[string][]string { return nil }, App: func(string) (App, bool) { return App{}, false }}),
			NoFailure: "a drain that fails is retried, never fatal"}
	})
}
