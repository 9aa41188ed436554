package elastic

import (
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"time"
)

// DefaultIndex is logsearch-for-cloudfoundry's app indices (logs-app-YYYY.MM.dd and its
// per-org/space variants).
const DefaultIndex = "logs-app-*"

// Paging says how a pull pages through the window.
type Paging string

const (
	// PagingAuto uses a point in time with search_after where the server has one
	// (Elasticsearch 7.10+, OpenSearch 2.4+) and scroll elsewhere.
	PagingAuto Paging = ""
	// PagingPIT insists on a point in time (failing where there is none).
	PagingPIT Paging = "pit"
	// PagingScroll uses the scroll API even where a point in time exists.
	PagingScroll Paging = "scroll"
)

// Config configures a Source. Only URLs is required.
type Config struct {
	// URLs are the cluster's base URLs (https://host:9200); requests go round robin,
	// skipping a URL that refuses connections for a while.
	URLs []string
	// Index is one or more index patterns, comma-separated, wildcards allowed
	// (default DefaultIndex).
	Index string
	// Username and Password are for basic auth; APIKey (the base64 "id:key" the
	// cluster hands out) takes precedence.
	Username, Password string
	APIKey             string
	// InsecureSkipVerify skips verifying the server's certificate.
	InsecureSkipVerify bool
	// Fields names the document's fields; zero values take DefaultFields' names.
	Fields Fields
	// Raw ignores the parsed router fields and parses the raw access-log line in
	// Fields.Message with accesslog.ParseGorouter, for pipelines that keep the line
	// but parse it differently (or not at all).
	Raw bool
	// Paging forces a paging method; PagingAuto picks by the server's version.
	Paging Paging
	// NoFilterPath asks for whole responses (no filter_path), NoSourceFilter for whole
	// documents (no _source includes); both exist to measure what filtering saves.
	NoFilterPath, NoSourceFilter bool
	// PageSize is the most documents per request (default 5,000, at most 10,000, the
	// usual index.max_result_window).
	PageSize int
	// KeepAlive is how long the server keeps a point in time or scroll between two
	// requests (default 2 minutes). A pull whose point in time expired opens another
	// and goes on from where it was.
	KeepAlive time.Duration
	// MaxRetries is how often one request is tried again after 429s, 5xx answers or
	// connection errors before the pull gives up with a *RetryError (default 10).
	MaxRetries int
	// RetryBackoff is the first wait before a retry (default 250 ms), doubling per
	// consecutive failure up to MaxBackoff (default 30 s), with jitter. A Retry-After
	// header is honoured when it asks for longer.
	RetryBackoff, MaxBackoff time.Duration
	// RequestTimeout bounds one request (default 60 s); a timeout counts as a
	// connection error.
	RequestTimeout time.Duration
	// Transport is the HTTP transport; nil for a default one (which honours
	// InsecureSkipVerify).
	Transport http.RoundTripper
	// Logger receives retries and fallbacks (structured, no secrets); nil discards.
	Logger *slog.Logger
}

// Fields names the fields of a router log document, as dotted paths into _source
// (nested objects and dotted keys both work). "-" means the documents have no such
// field. DefaultFields are the names logsearch-for-cloudfoundry's Logstash pipeline
// gives; other pipelines (SAP's, hosted ELKs) differ, see Set.
type Fields struct {
	// Timestamp is the document's date: the window is a range on it and pulls go in
	// its order. It must be a date (or date_nanos) field.
	Timestamp string
	// App and AppID are the app's name and GUID (keywords); Query.Apps matches either.
	App, AppID string
	// Message is the raw access-log line, read in raw mode.
	Message string

	// The parsed router fields (not read in raw mode).
	RequestTime     string // when gorouter received the request (text, RFC 3339)
	Host            string
	Method          string
	Path            string
	Proto           string
	Status          string
	BytesReceived   string
	BytesSent       string
	Referer         string
	UserAgent       string
	RemoteAddr      string // {host, port} object or "ip:port" text: the client as gorouter saw it
	BackendAddr     string // {host, port} object or "ip:port" text: the app instance
	XForwardedFor   string // list or text
	XForwardedProto string
	VcapRequestID   string
	ResponseTimeSec string // seconds; read when present, else ResponseTimeMS
	ResponseTimeMS  string
	GorouterTimeSec string
	GorouterTimeMS  string
	RouterAppID     string // the app GUID gorouter logged
	AppIndex        string
	Extra           string // object of the remaining key:value fields (instance_id, x_b3_traceid, …)
}

// DefaultFields returns the names logsearch-for-cloudfoundry gives RTR log messages
// (and foundation/logship writes).
func DefaultFields() Fields {
	return Fields{
		Timestamp: "@timestamp", App: "@cf.app", AppID: "@cf.app_id", Message: "@message",
		RequestTime: "rtr.timestamp", Host: "rtr.hostname", Method: "rtr.verb", Path: "rtr.path",
		Proto: "rtr.http_spec", Status: "rtr.status", BytesReceived: "rtr.request_bytes_received",
		BytesSent: "rtr.body_bytes_sent", Referer: "rtr.referer", UserAgent: "rtr.http_user_agent",
		RemoteAddr: "rtr.src", BackendAddr: "rtr.dst", XForwardedFor: "rtr.x_forwarded_for",
		XForwardedProto: "rtr.x_forwarded_proto", VcapRequestID: "rtr.vcap_request_id",
		ResponseTimeSec: "rtr.response_time_sec", ResponseTimeMS: "rtr.response_time_ms",
		GorouterTimeSec: "rtr.gorouter_time_sec", GorouterTimeMS: "rtr.gorouter_time_ms",
		RouterAppID: "rtr.app.id", AppIndex: "rtr.app.index", Extra: "rtr.extra",
	}
}

// names maps the names Set accepts to the fields.
func (f *Fields) names() map[string]*string {
	return map[string]*string{
		"timestamp": &f.Timestamp, "app": &f.App, "app_id": &f.AppID, "message": &f.Message,
		"request_time": &f.RequestTime, "host": &f.Host, "method": &f.Method, "path": &f.Path,
		"proto": &f.Proto, "status": &f.Status, "bytes_received": &f.BytesReceived,
		"bytes_sent": &f.BytesSent, "referer": &f.Referer, "user_agent": &f.UserAgent,
		"remote_addr": &f.RemoteAddr, "backend_addr": &f.BackendAddr,
		"x_forwarded_for": &f.XForwardedFor, "x_forwarded_proto": &f.XForwardedProto,
		"vcap_request_id": &f.VcapRequestID, "response_time_sec": &f.ResponseTimeSec,
		"response_time_ms": &f.ResponseTimeMS, "gorouter_time_sec": &f.GorouterTimeSec,
		"gorouter_time_ms": &f.GorouterTimeMS, "router_app_id": &f.RouterAppID,
		"app_index": &f.AppIndex, "extra": &f.Extra,
	}
}

// FieldNames lists the names Set accepts, sorted.
func FieldNames() []string {
	var f Fields
	var names []string
	for n := range f.names() {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Set overrides fields from a comma-separated list of name=path pairs, e.g.
// "response_time_sec=-,response_time_ms=latency_ms,vcap_request_id=request_id" (the
// names are FieldNames; "-" drops a field), for command-line flags.
func (f *Fields) Set(pairs string) error {
	names := f.names()
	for _, kv := range strings.Split(pairs, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		name, path, ok := strings.Cut(kv, "=")
		name, path = strings.TrimSpace(name), strings.TrimSpace(path)
		dst := names[name]
		if !ok || dst == nil || path == "" {
			return fmt.Errorf("field mapping %q: want name=path with name one of %s", kv, strings.Join(FieldNames(), ", "))
		}
		*dst = path
	}
	return nil
}

// withDefaults fills empty names from DefaultFields and turns "-" into "".
func (f Fields) withDefaults() Fields {
	def := DefaultFields()
	dn := def.names()
	for name, p := range f.names() {
		switch *p {
		case "":
			*p = *dn[name]
		case "-":
			*p = ""
		}
	}
	return f
}

func (c Config) withDefaults() Config {
	if c.Index == "" {
		c.Index = DefaultIndex
	}
	c.Fields = c.Fields.withDefaults()
	if c.PageSize <= 0 {
		c.PageSize = 5000
	}
	c.PageSize = min(c.PageSize, 10_000)
	if c.KeepAlive <= 0 {
		c.KeepAlive = 2 * time.Minute
	}
	if c.MaxRetries <= 0 {
		c.MaxRetries = 10
	}
	if c.RetryBackoff <= 0 {
		c.RetryBackoff = 250 * time.Millisecond
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = 30 * time.Second
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// keepAlive renders d as the API wants it ("90s").
func keepAlive(d time.Duration) string {
	return fmt.Sprintf("%ds", max(1, int(d.Round(time.Second)/time.Second)))
}
