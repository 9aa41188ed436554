package logship

import (
	"encoding/json"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/accesslog"
)

// document is an RTR LogMessage as logsearch-for-cloudfoundry's Logstash pipeline
// indexes it (snippets app.conf, app-logmessage.conf, app-logmessage-rtr.conf at
// 8be9abc, 2021-04-11). Two deliberate differences: @message keeps the raw access-log
// line (the pipeline replaces it with "200 GET /path (4.0 ms)"; the raw line lets a
// reader re-parse what it finds), and no geoip block.
type document struct {
	Timestamp string   `json:"@timestamp"`
	Type      string   `json:"@type"`
	IndexType string   `json:"@index_type"`
	Input     string   `json:"@input"`
	Message   string   `json:"@message"`
	Level     string   `json:"@level"`
	Source    source   `json:"@source"`
	CF        cfMeta   `json:"@cf"`
	Tags      []string `json:"tags"`
	RTR       rtr      `json:"rtr"`
}

type source struct {
	Type      string `json:"type"`
	Component string `json:"component"`
}

type cfMeta struct {
	App     string `json:"app,omitempty"`
	AppID   string `json:"app_id,omitempty"`
	Space   string `json:"space,omitempty"`
	SpaceID string `json:"space_id,omitempty"`
	Org     string `json:"org,omitempty"`
	OrgID   string `json:"org_id,omitempty"`
}

type hostPort struct {
	Host string `json:"host"`
	Port int    `json:"port,omitempty"`
}

type rtr struct {
	Hostname             string            `json:"hostname"`
	Timestamp            string            `json:"timestamp"`
	Verb                 string            `json:"verb"`
	Path                 string            `json:"path"`
	HTTPSpec             string            `json:"http_spec"`
	Status               *int              `json:"status,omitempty"`
	RequestBytesReceived int64             `json:"request_bytes_received"`
	BodyBytesSent        int64             `json:"body_bytes_sent"`
	Referer              string            `json:"referer"`
	HTTPUserAgent        string            `json:"http_user_agent"`
	Src                  *hostPort         `json:"src,omitempty"`
	Dst                  *hostPort         `json:"dst,omitempty"`
	RemoteAddr           string            `json:"remote_addr"`
	XForwardedFor        []string          `json:"x_forwarded_for"`
	XForwardedProto      string            `json:"x_forwarded_proto"`
	VcapRequestID        string            `json:"vcap_request_id"`
	ResponseTimeSec      *float64          `json:"response_time_sec,omitempty"`
	ResponseTimeMS       *float64          `json:"response_time_ms,omitempty"`
	GorouterTimeSec      *float64          `json:"gorouter_time_sec,omitempty"`
	GorouterTimeMS       *float64          `json:"gorouter_time_ms,omitempty"`
	App                  rtrApp            `json:"app"`
	Extra                map[string]string `json:"extra,omitempty"`
}

type rtrApp struct {
	ID    string `json:"id"`
	Index *int   `json:"index,omitempty"`
}

// rtrTimestampLayout is gorouter's own (a literal Z: its VMs run in UTC).
const rtrTimestampLayout = "2006-01-02T15:04:05.000000000Z"

// envelopeTime is when gorouter emitted the line: the firehose envelope's timestamp,
// which the pipeline makes @timestamp (in milliseconds), is taken as the request
// finishes, so it is the start plus response_time.
func envelopeTime(r *accesslog.Record) time.Time {
	return r.Time.Add(r.ResponseTime).UTC().Truncate(time.Millisecond)
}

// newDocument shapes r (parsed from line) as the pipeline would. app is the app's
// metadata when known.
func newDocument(line string, r *accesslog.Record, app AppInfo, known bool) document {
	d := document{
		Timestamp: envelopeTime(r).Format("2006-01-02T15:04:05.000Z"),
		Type:      "LogMessage",
		IndexType: "app",
		Input:     "syslog",
		Message:   line,
		Level:     level(r.Status),
		Source:    source{Type: "RTR", Component: "gorouter"},
		Tags:      []string{"app", "logmessage", "logmessage-rtr"},
	}
	d.CF.AppID = r.AppID
	if known {
		d.CF.App, d.CF.Space, d.CF.SpaceID, d.CF.Org, d.CF.OrgID = app.Name, app.SpaceName, app.SpaceGUID, app.OrgName, app.OrgGUID
	}

	x := &d.RTR
	x.Hostname = r.Host
	if r.Time.Location() == time.UTC {
		x.Timestamp = r.Time.Format(rtrTimestampLayout)
	} else {
		x.Timestamp = r.Time.Format(time.RFC3339Nano)
	}
	x.Verb, x.Path, x.HTTPSpec = r.Method, r.URI, r.Proto
	if r.Status != 0 {
		x.Status = &r.Status
	}
	x.RequestBytesReceived, x.BodyBytesSent = r.BytesReceived, r.BytesSent
	x.Referer, x.HTTPUserAgent = dash(r.Referer), dash(r.UserAgent)
	x.Src, x.Dst = splitHostPort(r.RemoteAddr), splitHostPort(r.BackendAddr)
	// The pipeline strips blanks and quotes, splits at commas and takes the first
	// entry, the client, as remote_addr.
	xff := strings.Map(func(c rune) rune {
		if c == ' ' || c == '\t' || c == '"' {
			return -1
		}
		return c
	}, dash(r.XForwardedFor))
	x.XForwardedFor = strings.Split(xff, ",")
	x.RemoteAddr = x.XForwardedFor[0]
	x.XForwardedProto, x.VcapRequestID = dash(r.XForwardedProto), dash(r.VcapRequestID)
	if r.Has(accesslog.FieldResponseTime) {
		x.ResponseTimeSec, x.ResponseTimeMS = secMS(r.ResponseTime)
	}
	if r.Has(accesslog.FieldGorouterTime) {
		x.GorouterTimeSec, x.GorouterTimeMS = secMS(r.GorouterTime)
	}
	x.App.ID = dash(r.AppID)
	if r.Has(accesslog.FieldAppIndex) {
		x.App.Index = &r.AppIndex
	}
	x.Extra = extra(r)
	return d
}

// extra is what the pipeline's kv filter makes of the fields after app_index: every
// one of them, values as written ("-" included).
func extra(r *accesslog.Record) map[string]string {
	m := make(map[string]string, len(r.Extra)+8)
	for k, v := range r.Extra {
		m[k] = v
	}
	for _, f := range [...]struct {
		f    accesslog.Field
		name string
		v    string
	}{
		{accesslog.FieldInstanceID, "instance_id", r.InstanceID},
		{accesslog.FieldRouterError, "x_cf_routererror", r.RouterError},
		{accesslog.FieldB3TraceID, "x_b3_traceid", r.B3TraceID},
		{accesslog.FieldB3SpanID, "x_b3_spanid", r.B3SpanID},
		{accesslog.FieldB3ParentSpanID, "x_b3_parentspanid", r.B3ParentSpanID},
		{accesslog.FieldB3, "b3", r.B3},
		{accesslog.FieldLocalAddress, "local_address", r.LocalAddress},
	} {
		if r.Has(f.f) {
			m[f.name] = dash(f.v)
		}
	}
	for _, f := range [...]struct {
		f    accesslog.Field
		name string
		v    time.Duration
	}{
		{accesslog.FieldBackendTime, "backend_time", r.BackendTime},
		{accesslog.FieldDialTime, "dial_time", r.DialTime},
		{accesslog.FieldDNSTime, "dns_time", r.DNSTime},
		{accesslog.FieldTLSTime, "tls_time", r.TLSTime},
		{accesslog.FieldFailedAttemptsTime, "failed_attempts_time", r.FailedAttemptsTime},
	} {
		if r.Has(f.f) {
			m[f.name] = accesslog.FormatSeconds(f.v)
		}
	}
	if r.Has(accesslog.FieldFailedAttempts) {
		m["failed_attempts"] = strconv.Itoa(r.FailedAttempts)
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// secMS returns d in seconds and in milliseconds; the pipeline derives the latter by
// moving the decimal point of the 6-decimal seconds text, i.e. truncated to µs.
func secMS(d time.Duration) (*float64, *float64) {
	sec := d.Seconds()
	ms := float64(d/time.Microsecond) / 1000
	return &sec, &ms
}

func level(status int) string {
	switch {
	case status >= 500:
		return "ERROR"
	case status >= 400:
		return "WARN"
	}
	return "INFO"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// splitHostPort gives the pipeline's rtr.src / rtr.dst: host and port of an ip:port
// ("[v6]:port" too); nil for "-".
func splitHostPort(addr string) *hostPort {
	if addr == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return &hostPort{Host: addr}
	}
	p, _ := strconv.Atoi(port)
	return &hostPort{Host: host, Port: p}
}

// appendBulkItem appends one create action and its document to b. Create (not index)
// works for plain indices and data streams alike; the explicit _id makes a retried
// item that had in fact been indexed a 409 instead of a duplicate.
func appendBulkItem(b []byte, index, id string, d *document) ([]byte, error) {
	idx, err := json.Marshal(index)
	if err != nil {
		return nil, err
	}
	b = append(b, `{"create":{"_index":`...)
	b = append(b, idx...)
	b = append(b, `,"_id":`...)
	b = strconv.AppendQuote(b, id) // hex and digits only
	b = append(b, "}}\n"...)
	doc, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	b = append(b, doc...)
	return append(b, '\n'), nil
}

// Document shapes one gorouter access-log line as CF's Logstash pipeline indexes it
// (see document), for tools and tests that load router logs into a cluster without a
// Shipper; at is the document's @timestamp. app may be zero (then only @cf.app_id).
func Document(line string, app AppInfo) (doc []byte, at time.Time, err error) {
	r, err := accesslog.ParseGorouter([]byte(line))
	if err != nil {
		return nil, time.Time{}, err
	}
	d := newDocument(line, &r, app, app.Name != "")
	doc, err = json.Marshal(&d)
	return doc, envelopeTime(&r), err
}
