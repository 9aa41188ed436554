package logcache

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"time"
)

// Version is the log-cache release this API answers as in /api/v1/info. Clients pick
// the /api/v1 paths for any version from 2.0.0 on.
const Version = "3.2.12"

// Read limits, as log-cache's.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// Authorizer decides who reads what. Implementations are safe for concurrent use.
type Authorizer interface {
	// Authenticated reports whether the request's Authorization header value is a
	// valid token.
	Authenticated(authorization string) bool
	// CanRead reports whether the request's Authorization header value authorises
	// reading sourceID: a valid token whose user may see that app.
	CanRead(authorization, sourceID string) bool
}

// APIConfig wires the read API.
type APIConfig struct {
	Store *Store
	Auth  Authorizer
	// Clock gives the default end_time; default time.Now.
	Clock func() time.Time
	// Started is when this Log Cache came up, for info's vm_uptime.
	Started time.Time
}

// Handler serves GET /api/v1/info, GET /api/v1/read/:source_id and GET /api/v1/meta;
// anything else under /api/v1/ is a 404.
func Handler(cfg APIConfig) http.Handler {
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	a := &api{cfg: cfg}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/info", a.info)
	mux.HandleFunc("GET /api/v1/read/{source...}", a.read)
	mux.HandleFunc("GET /api/v1/meta", a.meta)
	mux.HandleFunc("/", http.NotFound)
	return mux
}

type api struct{ cfg APIConfig }

func (a *api) info(w http.ResponseWriter, r *http.Request) {
	up := int64(a.cfg.Clock().Sub(a.cfg.Started).Seconds())
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"version":%q,"vm_uptime":"%d"}`+"\n", Version, max(up, 0))
}

// gRPC status codes of the errors the gateway passes on.
const (
	codeUnknown         = 2
	codeInvalidArgument = 3
)

// rpcError answers as grpc-gateway's default error handler: the HTTP status of the
// code and a google.rpc.Status body.
func rpcError(w http.ResponseWriter, code int, msg string) {
	status := http.StatusInternalServerError
	if code == codeInvalidArgument {
		status = http.StatusBadRequest
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"code": code, "message": msg, "details": []any{}})
}

// envelopeTypes are the names envelope_types accepts (logcache_v1.EnvelopeType).
var envelopeTypes = map[string]bool{"ANY": true, "LOG": true, "COUNTER": true, "GAUGE": true, "TIMER": true, "EVENT": true}

func (a *api) read(w http.ResponseWriter, r *http.Request) {
	source := r.PathValue("source")
	auth := r.Header.Get("Authorization")
	if source == "" || auth == "" || a.cfg.Auth == nil || !a.cfg.Auth.CanRead(auth, source) {
		w.WriteHeader(http.StatusNotFound) // the CF auth proxy's answer, body and all
		return
	}
	v := r.URL.Query()
	q := Query{SourceID: source}
	var limit int64
	for _, p := range []struct {
		name string
		dst  *int64
	}{{"start_time", &q.Start}, {"end_time", &q.End}, {"limit", &limit}} {
		if s := v.Get(p.name); s != "" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				rpcError(w, codeInvalidArgument, fmt.Sprintf("parsing field %q: %q is not a valid int64", p.name, s))
				return
			}
			*p.dst = n
		}
	}
	for _, t := range v["envelope_types"] {
		if !envelopeTypes[t] {
			rpcError(w, codeInvalidArgument, fmt.Sprintf("parsing field %q: %q is not a valid EnvelopeType", "envelope_types", t))
			return
		}
		if t != "ANY" {
			q.Types = append(q.Types, t)
		}
	}
	if s := v.Get("descending"); s != "" {
		d, err := strconv.ParseBool(s)
		if err != nil {
			rpcError(w, codeInvalidArgument, fmt.Sprintf("parsing field %q: %q is not a valid bool", "descending", s))
			return
		}
		q.Descending = d
	}
	// log-cache's checks (routing.LocalStoreReader.Read), in its order.
	switch {
	case q.End != 0 && q.Start > q.End:
		rpcError(w, codeUnknown, fmt.Sprintf("StartTime (%d) must be before EndTime (%d)", q.Start, q.End))
		return
	case limit > MaxLimit:
		rpcError(w, codeUnknown, fmt.Sprintf("limit (%d) must be %d or less", limit, MaxLimit))
		return
	case limit < 0:
		rpcError(w, codeUnknown, fmt.Sprintf("limit (%d) must be greater than zero", limit))
		return
	}
	if q.End == 0 {
		q.End = a.cfg.Clock().UnixNano()
	}
	q.Limit = int(limit)
	if q.Limit == 0 {
		q.Limit = DefaultLimit
	}
	if f := v.Get("name_filter"); f != "" {
		re, err := regexp.Compile(f)
		if err != nil {
			rpcError(w, codeUnknown, "name filter must be a valid regular expression: "+err.Error())
			return
		}
		q.NameFilter = re.MatchString
	}
	batch := a.cfg.Store.Read(q)
	if batch == nil {
		batch = []Envelope{}
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(map[string]any{"envelopes": map[string]any{"batch": batch}})
}

// meta answers as the CF auth proxy does: 404 without a valid token, else the meta of
// the sources the token may read, in protojson's default form (the proxy marshals
// logcache.v1.MetaResponse itself, unlike the gateway: JSON names in lowerCamelCase,
// int64 as strings, zeros and an empty map left out) and without a Content-Type.
func (a *api) meta(w http.ResponseWriter, r *http.Request) {
	auth := r.Header.Get("Authorization")
	if auth == "" || a.cfg.Auth == nil || !a.cfg.Auth.Authenticated(auth) {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	type info struct {
		Count           int64 `json:"count,string,omitempty"`
		Expired         int64 `json:"expired,string,omitempty"`
		OldestTimestamp int64 `json:"oldestTimestamp,string,omitempty"`
		NewestTimestamp int64 `json:"newestTimestamp,string,omitempty"`
	}
	var out struct {
		Meta map[string]info `json:"meta,omitempty"`
	}
	// Authorised outside the store's lock: the authorizer may wait on the API's state.
	for id, m := range a.cfg.Store.Meta() {
		if !a.cfg.Auth.CanRead(auth, id) {
			continue
		}
		if out.Meta == nil {
			out.Meta = map[string]info{}
		}
		out.Meta[id] = info{m.Count, m.Expired, m.Oldest, m.Newest}
	}
	b, _ := json.Marshal(out)
	w.Write(append(b, '\n'))
}
