package accesslog

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMarshalJSON(t *testing.T) {
	cases := []struct {
		name, line string
		parse      ParseFunc
		want       string
	}{
		{"gorouter, every field", `pay.example.com - [2024-03-18T09:12:45.5Z] "POST /charge?a=1&b=2 HTTP/2.0" 502 218 67 "-" "okhttp/4.12.0" "[2001:db8::17]:51554" "[fd00::b]:61001" x_forwarded_for:"2001:db8::42" x_forwarded_proto:"https" vcap_request_id:"c0ffee00" response_time:3.000518 gorouter_time:0.000840 app_id:"f00d" app_index:"0" instance_id:"9a8b" backend_time:"-" dial_time:0.001203 dns_time:0 tls_time:0.004411 failed_attempts:2 failed_attempts_time:1.002044 local_address:"[fd00::5]:42180" x_cf_routererror:"endpoint_failure (context deadline exceeded)" x_b3_traceid:"5a3c" x_b3_spanid:"7c9b" x_b3_parentspanid:"-" b3:"5a3c-7c9b" traceparent:"00-4bf9-00f0-01" x_empty:"-"`, ParseGorouter,
			`{"time":"2024-03-18T09:12:45.5Z","host":"pay.example.com","method":"POST","uri":"/charge?a=1&b=2","proto":"HTTP/2.0","status":502,"bytes_received":218,"bytes_sent":67,"user_agent":"okhttp/4.12.0","remote_addr":"[2001:db8::17]:51554","backend_addr":"[fd00::b]:61001","x_forwarded_for":"2001:db8::42","x_forwarded_proto":"https","vcap_request_id":"c0ffee00","response_time_us":3000518,"gorouter_time_us":840,"app_id":"f00d","app_index":0,"instance_id":"9a8b","x_cf_routererror":"endpoint_failure (context deadline exceeded)","x_b3_traceid":"5a3c","x_b3_spanid":"7c9b","b3":"5a3c-7c9b","dial_time_us":1203,"dns_time_us":0,"tls_time_us":4411,"failed_attempts":2,"failed_attempts_time_us":1002044,"local_address":"[fd00::5]:42180","extra":{"traceparent":"00-4bf9-00f0-01","x_empty":"-"}}`},
		{"gorouter, dashes", `ghost.example.com - [2024-03-18T09:13:00Z] "GET / HTTP/1.1" "-" 0 0 "-" "-" "-" "-" x_forwarded_for:"-" x_forwarded_proto:"-" vcap_request_id:"-" response_time:"-" gorouter_time:"-" app_id:"-" app_index:"-" instance_id:"-" x_cf_routererror:"unknown_route"`, ParseGorouter,
			`{"time":"2024-03-18T09:13:00Z","host":"ghost.example.com","method":"GET","uri":"/","proto":"HTTP/1.1","bytes_sent":0,"x_cf_routererror":"unknown_route"}`},
		{"common", `203.0.113.7 - frank [10/Oct/2000:13:55:36 -0700] "GET /a.gif HTTP/1.0" 200 2326`, ParseCommon,
			`{"time":"2000-10-10T13:55:36-07:00","method":"GET","uri":"/a.gif","proto":"HTTP/1.0","status":200,"bytes_sent":2326,"remote_addr":"203.0.113.7","extra":{"auth_user":"frank"}}`},
		{"combined with a response time", `10.255.0.3 - - [18/Mar/2024:09:12:46 +0000] "-" 408 - "-" "<script>" response_time:0.001534`, ParseCombined,
			`{"time":"2024-03-18T09:12:46Z","status":408,"bytes_sent":0,"user_agent":"<script>","remote_addr":"10.255.0.3","response_time_us":1534}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := c.parse([]byte(c.line))
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range []any{r, &r} {
				got, err := json.Marshal(v)
				if err != nil {
					t.Fatal(err)
				}
				// json.Marshal escapes <, > and & after MarshalJSON; the record does not.
				var unescaped bytes.Buffer
				enc := json.NewEncoder(&unescaped)
				enc.SetEscapeHTML(false)
				if err := enc.Encode(v); err != nil {
					t.Fatal(err)
				}
				if s := strings.TrimSuffix(unescaped.String(), "\n"); s != c.want {
					t.Errorf("%T:\n got %s\nwant %s", v, s, c.want)
				}
				var back, want any
				if json.Unmarshal(got, &back) != nil || json.Unmarshal([]byte(c.want), &want) != nil || !jsonEqual(back, want) {
					t.Errorf("json.Marshal(%T) = %s, not the same value as %s", v, got, c.want)
				}
			}
		})
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// TestJSONGolden writes every record of the good testdata logs as JSON lines and compares
// them with testdata/<name>.<format>.jsonl; -update rewrites those.
func TestJSONGolden(t *testing.T) {
	for _, c := range []struct {
		file   string
		format Format
	}{
		{"gorouter.log", Gorouter},
		{"common.log", Common},
		{"combined.log", Combined},
	} {
		name := strings.TrimSuffix(c.file, ".log") + "." + string(c.format) + ".jsonl"
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			in, err := os.ReadFile(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			enc := json.NewEncoder(&out)
			enc.SetEscapeHTML(false)
			for i, line := range bytes.Split(bytes.TrimSuffix(in, []byte("\n")), []byte("\n")) {
				r, err := c.format.Parse(line)
				if err != nil {
					t.Fatalf("line %d: %v", i+1, err)
				}
				if err := enc.Encode(r); err != nil {
					t.Fatal(err)
				}
			}
			golden := filepath.Join("testdata", name)
			if *update {
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Errorf("output differs from %s (go test -update rewrites it); got:\n%s", golden, out.String())
			}
		})
	}
}
