package worker

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/cf-benchmark/cf-benchmark/loadgen"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// Workload is what every instance of a variant sends, as the engine writes it into the
// run's plan (run_variants.workload) and generators read it back. Its JSON form is part
// of the results schema: fields are only ever added.
type Workload struct {
	Model             spec.Model    `json:"model"`
	Users             int           `json:"users,omitempty"`
	ThinkTime         time.Duration `json:"think_time_ns,omitempty"`
	Rate              float64       `json:"rate,omitempty"`
	RatePer           spec.RatePer  `json:"rate_per,omitempty"`
	Count             int           `json:"count,omitempty"`
	MaxInFlight       int           `json:"max_in_flight,omitempty"`
	Tick              time.Duration `json:"tick_ns,omitempty"` // loadgen.Config.Tick; 0 (plans stored before it): loadgen's default
	KeepAlive         bool          `json:"keep_alive"`
	Timeout           time.Duration `json:"timeout_ns"`
	CorrelationHeader string        `json:"correlation_header,omitempty"`
	Requests          []Request     `json:"requests"`
	// ConnectTo is the "host:port" generators dial instead of the target URL's (see
	// loadgen.Config.ConnectTo). The engine sets it from the platform, e.g. the local
	// foundation's router, whose app routes do not resolve by DNS; empty on a real
	// foundation. Not part of the spec.
	ConnectTo string `json:"connect_to,omitempty"`
}

// Request is one entry of the weighted request mix.
type Request struct {
	// Name is the spec's name of the request, for exports and reports.
	Name    string            `json:"name,omitempty"`
	Method  string            `json:"method"`
	Path    string            `json:"path"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty"`
	Weight  int               `json:"weight"`
}

// FromSpec converts a validated spec workload.
func FromSpec(w *spec.Workload) Workload {
	out := Workload{Model: w.Model, Users: w.Users, ThinkTime: w.ThinkTime, Rate: w.Rate, RatePer: w.RatePer, MaxInFlight: w.MaxInFlight,
		Tick: w.Tick, Count: w.RequestsPerInstance, KeepAlive: w.KeepAlive, Timeout: w.Timeout, CorrelationHeader: w.CorrelationHeader}
	for _, r := range w.Requests {
		out.Requests = append(out.Requests, Request{Name: r.Name, Method: r.Method, Path: r.Path, Headers: r.Headers, Body: r.Body, Weight: r.Weight})
	}
	return out
}

// Marshal is the JSON stored in the plan.
func (w Workload) Marshal() []byte {
	b, err := json.Marshal(w)
	if err != nil {
		panic(err) // only plain fields: cannot fail
	}
	return b
}

// ParseWorkload reads a plan's workload.
func ParseWorkload(b []byte) (Workload, error) {
	var w Workload
	if err := json.Unmarshal(b, &w); err != nil {
		return w, fmt.Errorf("workload in the run plan: %w", err)
	}
	return w, nil
}

// perInstanceRate is the open-loop rate of one of live instances in step st (nil
// between steps): the step's rate in all when it has one (a ramp of rates), else the
// workload's.
func (w *Workload) perInstanceRate(st *resultsdb.Step, live int) float64 {
	switch {
	case st != nil && st.Rate > 0:
		return st.Rate / float64(max(live, 1))
	case w.RatePer == spec.RatePerTotal:
		return w.Rate / float64(max(live, 1))
	}
	return w.Rate
}

// config is the loadgen configuration for one instance.
func (w *Workload) config(target string, tag, workerID uint32, epoch time.Time, lookup func(string) (string, bool)) (loadgen.Config, error) {
	u, err := url.Parse(target)
	if err != nil {
		return loadgen.Config{}, fmt.Errorf("target url: %w", err)
	}
	cfg := loadgen.Config{Target: u, Users: w.Users, ThinkTime: w.ThinkTime, Count: w.Count, MaxInFlight: w.MaxInFlight,
		Tick: w.Tick, KeepAlive: w.KeepAlive, Timeout: w.Timeout, CorrelationHeader: w.CorrelationHeader, ConnectTo: w.ConnectTo,
		TraceTag: tag, WorkerID: workerID, Epoch: epoch}
	switch w.Model {
	case spec.ModelOpen:
		cfg.Model = loadgen.Open
	case spec.ModelCount:
		cfg.Model = loadgen.Count
	case spec.ModelClosed:
		cfg.Model = loadgen.Closed
	default:
		return cfg, fmt.Errorf("workload model %q: want closed, open or count", w.Model)
	}
	for _, r := range w.Requests {
		h := http.Header{}
		for k, v := range r.Headers {
			v, err := spec.ExpandHeader(v, lookup)
			if err != nil {
				return cfg, fmt.Errorf("request %s, header %s: %w", r.Path, k, err)
			}
			h.Set(k, v)
		}
		var body []byte
		if r.Body != "" {
			body = []byte(r.Body)
		}
		cfg.Requests = append(cfg.Requests, loadgen.Request{Method: r.Method, Path: r.Path, Header: h, Body: body, Weight: r.Weight})
	}
	return cfg, nil
}
