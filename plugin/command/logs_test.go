package command

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/accesslog"
)

// runInput is run (command_test.go) with stdin.
func runInput(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	env := &Env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	code := Main(context.Background(), env, args)
	return result{code, out.String(), errb.String()}
}

const (
	rtrLine = `shop.apps.example.com - [2024-03-18T09:12:44.118327461Z] "GET /api/cart?a=1&b=2 HTTP/1.1" 200 0 1873 "-" "curl/8.5.0" "10.0.16.5:48212" "10.0.32.11:61002" x_forwarded_for:"198.51.100.23" x_forwarded_proto:"https" vcap_request_id:"5a3c8e0f-6b2d-4e1a-7c9b-0d8f3e2a1b4c" response_time:0.021734 gorouter_time:0.000412 app_id:"b7e4c2a9" app_index:"2" instance_id:"d41c" x_cf_routererror:"-"`
	// What `cf logs APP` prints for a router line.
	cfLogsLine = `   2026-11-22T13:05:01.12+0000 [RTR/0] OUT myapp.example.com - [2026-11-22T13:05:01.123456789Z] "GET / HTTP/1.1" 502 0 67 "-" "cf-benchmark/0.1" "10.0.16.5:40112" "10.0.32.11:61004" x_forwarded_for:"198.51.100.23" x_forwarded_proto:"https" vcap_request_id:"9d8c7b6a" response_time:0.002918 gorouter_time:0.002918 app_id:"b7e4c2a9" app_index:"0" instance_id:"e6f7" failed_attempts:3 x_cf_routererror:"endpoint_failure" x_b3_traceid:"9d8c7b6a5f4e4d3c" traceparent:"00-9d8c-7b6a-01"`
)

func TestLogsParse(t *testing.T) {
	in := strings.Join([]string{
		rtrLine,
		"Retrieving logs for app myapp in org o / space s as admin...", // cf logs' header
		"",
		cfLogsLine,
		`   2026-11-22T13:05:01.20+0000 [APP/PROC/WEB/0] OUT listening on 8080`,
		strings.Repeat("x", accesslog.MaxLineBytes+1),
		`203.0.113.7 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 200 2326`,
		strings.Replace(rtrLine, "200 0 1873", "2OO 0 1873", 1),
		rtrLine + "\r", // CRLF
	}, "\n") // and no newline at the end
	r := runInput(t, in, "logs", "parse", "--format", "gorouter")
	if r.code != ExitOK {
		t.Fatalf("code %d, want %d; stderr:\n%s", r.code, ExitOK, r.stderr)
	}

	wantOut := `{"time":"2024-03-18T09:12:44.118327461Z","host":"shop.apps.example.com","method":"GET","uri":"/api/cart?a=1&b=2","proto":"HTTP/1.1","status":200,"bytes_sent":1873,"user_agent":"curl/8.5.0","remote_addr":"10.0.16.5:48212","backend_addr":"10.0.32.11:61002","x_forwarded_for":"198.51.100.23","x_forwarded_proto":"https","vcap_request_id":"5a3c8e0f-6b2d-4e1a-7c9b-0d8f3e2a1b4c","response_time_us":21734,"gorouter_time_us":412,"app_id":"b7e4c2a9","app_index":2,"instance_id":"d41c"}` + "\n" +
		`{"time":"2026-11-22T13:05:01.123456789Z","host":"myapp.example.com","method":"GET","uri":"/","proto":"HTTP/1.1","status":502,"bytes_sent":67,"user_agent":"cf-benchmark/0.1","remote_addr":"10.0.16.5:40112","backend_addr":"10.0.32.11:61004","x_forwarded_for":"198.51.100.23","x_forwarded_proto":"https","vcap_request_id":"9d8c7b6a","response_time_us":2918,"gorouter_time_us":2918,"app_id":"b7e4c2a9","app_index":0,"instance_id":"e6f7","x_cf_routererror":"endpoint_failure","x_b3_traceid":"9d8c7b6a5f4e4d3c","failed_attempts":3,"extra":{"traceparent":"00-9d8c-7b6a-01"}}` + "\n"
	wantOut += strings.SplitAfter(wantOut, "\n")[0] // the CRLF line is the first one again
	if r.stdout != wantOut {
		t.Errorf("stdout:\n%s\nwant:\n%s", r.stdout, wantOut)
	}
	for i, line := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("stdout line %d is not JSON: %s", i+1, line)
		}
	}

	wantErr := []string{
		`line 2: gorouter: column 11: expected " - [" after the host, found " logs for app myapp in o"…`,
		`line 5: gorouter: column 32: expected a router line ("[RTR/N]") of cf logs, found "[APP/PROC/WEB/0] OUT lis"…`,
		`line 6: line too long (over 1048576 bytes)`,
		`line 7: gorouter: column 12: expected " - [" after the host, found " - - [10/Oct/2000:13:55:"…`,
		`line 8: gorouter: column 91: expected an HTTP status (3 digits) or "-", found "2OO 0 1873 \"-\" \"curl/8.5"…`,
		`parsed 3 lines, 5 unparseable`,
	}
	if got := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n"); strings.Join(got, "\n") != strings.Join(wantErr, "\n") {
		t.Errorf("stderr:\n%s\nwant:\n%s", r.stderr, strings.Join(wantErr, "\n"))
	}
}

func TestLogsParseApacheFormats(t *testing.T) {
	const combined = `203.0.113.7 - frank [10/Oct/2000:13:55:36 -0700] "GET /a.gif HTTP/1.0" 200 2326 "http://www.example.com/" "Mozilla/4.08"` + "\n"
	r := runInput(t, combined+"garbage\n", "logs", "parse", "--format", "combined")
	want := `{"time":"2000-10-10T13:55:36-07:00","method":"GET","uri":"/a.gif","proto":"HTTP/1.0","status":200,"bytes_sent":2326,"referer":"http://www.example.com/","user_agent":"Mozilla/4.08","remote_addr":"203.0.113.7","extra":{"auth_user":"frank"}}` + "\n"
	if r.code != ExitOK || r.stdout != want || r.stderr != "line 2: combined: column 8: expected a space before ident (%l), found end of line\nparsed 1 lines, 1 unparseable\n" {
		t.Errorf("combined: %+v", r)
	}
	r = runInput(t, combined, "logs", "parse", "--format", "common")
	if r.code != ExitOK || !strings.Contains(r.stdout, `"extra":{"auth_user":"frank","trailing":"\"http://www.example.com/\" \"Mozilla/4.08\""}`) || r.stderr != "parsed 1 lines, 0 unparseable\n" {
		t.Errorf("common: %+v", r)
	}
	r = runInput(t, "", "logs", "parse")
	if r.code != ExitOK || r.stdout != "" || r.stderr != "parsed 0 lines, 0 unparseable\n" {
		t.Errorf("empty input: %+v", r)
	}
}

func TestLogsUsage(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"logs"}, "error: give the subcommand: parse\nUsage: cf-benchmark logs parse [--format combined|common|gorouter] < ACCESS_LOG\n"},
		{[]string{"logs", "show"}, "error: give the subcommand: parse\n"},
		{[]string{"logs", "parse", "extra"}, "error: give the subcommand: parse\n"},
		{[]string{"logs", "parse", "--format", "nginx"}, "error: --format \"nginx\": want one of combined, common, gorouter\n"},
		{[]string{"logs", "parse", "--formt", "gorouter"}, "flag provided but not defined: -formt\n"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			r := run(t, nil, c.args...)
			if r.code != ExitUsage || !strings.HasPrefix(r.stderr, c.want) || r.stdout != "" {
				t.Fatalf("code %d stderr %q, want %d and prefix %q", r.code, r.stderr, ExitUsage, c.want)
			}
		})
	}
	// run gives no stdin: that is a broken environment, not a bad invocation.
	if r := run(t, nil, "logs", "parse"); r.code != ExitFailure || r.stderr != "error: no standard input to read\n" {
		t.Errorf("without stdin: %+v", r)
	}
}

func TestLogsAsPlugin(t *testing.T) {
	c := Lookup("benchmark-logs")
	if c == nil || c != Lookup("logs") {
		t.Fatal("benchmark-logs is not the logs command")
	}
	if got := c.Example("cf"); got != "cf benchmark-logs parse --format gorouter < access.log" {
		t.Errorf("plugin example %q", got)
	}
	var out, errb bytes.Buffer
	env := &Env{Stdin: strings.NewReader(cfLogsLine + "\n"), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	code := Execute(context.Background(), env, "cf", c, []string{"parse", "--format", "gorouter"})
	if code != ExitOK || !strings.HasPrefix(out.String(), `{"time":"2026-11-22T13:05:01.123456789Z","host":"myapp.example.com"`) || errb.String() != "parsed 1 lines, 0 unparseable\n" {
		t.Errorf("cf benchmark-logs parse: code %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	errb.Reset()
	if code := Execute(context.Background(), env, "cf", c, []string{"parse", "--format", "x"}); code != ExitUsage ||
		!strings.Contains(errb.String(), "Usage: cf benchmark-logs parse [--format") {
		t.Errorf("bad format as plugin: code %d, stderr %q", code, errb.String())
	}
}

// lockedBuffer is a bytes.Buffer safe to read while a command writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestLogsParseStreams feeds lines one at a time, as `cf logs APP |` does, and wants
// each record on stdout before the next line comes; then an interrupt ends the command
// while it waits for input.
func TestLogsParseStreams(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	var out, errb lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := &Env{Stdin: pr, Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	code := make(chan int, 1)
	go func() { code <- Main(ctx, env, []string{"logs", "parse"}) }()

	for i := 1; i <= 2; i++ {
		if _, err := io.WriteString(pw, cfLogsLine+"\n"); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for strings.Count(out.String(), "\n") < i {
			if time.Now().After(deadline) {
				t.Fatalf("record %d not written while waiting for more input; stdout %q", i, out.String())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	cancel()
	select {
	case c := <-code:
		if c != ExitAborted || errb.String() != "parsed 2 lines, 0 unparseable\n" {
			t.Errorf("interrupted: code %d, stderr %q", c, errb.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("an interrupt did not end the command blocked on stdin")
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

func TestLogsParseWriteError(t *testing.T) {
	var errb bytes.Buffer
	// More than the output buffer holds, so writing fails before the input ends.
	in := strings.Repeat(rtrLine+"\n", 1000)
	env := &Env{Stdin: strings.NewReader(in), Stdout: failingWriter{}, Stderr: &errb, Getenv: func(string) string { return "" }}
	code := Main(context.Background(), env, []string{"logs", "parse"})
	lines := strings.Split(strings.TrimSuffix(errb.String(), "\n"), "\n")
	if code != ExitFailure || len(lines) != 2 || !strings.HasPrefix(lines[0], "parsed ") || lines[1] != "error: write JSON: broken pipe" {
		t.Errorf("code %d, stderr %q", code, errb.String())
	}
}

// TestLogsParseSyslogFramed reads what a syslog drain received: RFC 5424 messages one a
// line (HTTPS) and with their octet counts (TCP); the app's own message is reported.
func TestLogsParseSyslogFramed(t *testing.T) {
	msg := `<14>1 2026-11-24T18:57:01.140329+00:00 o.s.myapp b7e4c2a9 [RTR/3] - [tags@47450 source_type="RTR"] ` + rtrLine + "\n"
	app := `<14>1 2026-11-24T18:57:01.140329+00:00 o.s.myapp b7e4c2a9 [APP/PROC/WEB/0] - - listening` + "\n"
	in := msg + fmt.Sprintf("%d %s", len(msg), msg) + app
	r := runInput(t, in, "logs", "parse")
	first := runInput(t, rtrLine, "logs", "parse").stdout
	if r.code != ExitOK || r.stdout != first+first {
		t.Errorf("code %d, stdout:\n%s\nwant twice:\n%s", r.code, r.stdout, first)
	}
	want := "line 3: gorouter: column 59: expected a router message (\"[RTR/N]\") of a syslog drain, found \"[APP/PROC/WEB/0] - - lis\"…\nparsed 2 lines, 1 unparseable\n"
	if r.stderr != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", r.stderr, want)
	}
}
