package elastic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RetryError is returned by Pull when one request kept failing with 429s, 5xx answers
// or connection errors after Config.MaxRetries retries. Nothing was emitted for that
// request; the cursor of the last emitted batch resumes the pull.
type RetryError struct {
	Op       string // what was asked: "search", "open point in time", …
	Attempts int
	Status   int   // the last HTTP status, 0 after a connection error
	Err      error // the last failure
}

func (e *RetryError) Error() string {
	return fmt.Sprintf("elastic: %s failed %d times, giving up: %v", e.Op, e.Attempts, e.Err)
}

func (e *RetryError) Unwrap() error { return e.Err }

// ResponseError is an answer that retrying cannot change (400, 401, 403, 404, …).
type ResponseError struct {
	Op     string
	Status int
	// Type and Reason are the server's error.type and error.reason when it gave them.
	Type, Reason string

	product string // the X-Elastic-Product header: Elasticsearch 7.14+ sends it on every answer
}

func (e *ResponseError) Error() string {
	if e.Type == "" {
		return fmt.Sprintf("elastic: %s: HTTP %d %s", e.Op, e.Status, e.Reason)
	}
	return fmt.Sprintf("elastic: %s: HTTP %d %s: %s", e.Op, e.Status, e.Type, e.Reason)
}

// errContextMissing marks a point in time or scroll the server no longer has (expired,
// deleted, node restarted): the pull opens another and goes on from its position.
var errContextMissing = errors.New("search context missing")

// request is one HTTP request to the cluster.
type request struct {
	op     string // for errors and logs
	method string
	path   string // with query string
	body   []byte
	// once marks requests that must not be sent twice: a scroll continuation that
	// failed may have moved the scroll, so the caller restarts instead.
	once bool
}

// failure is a failed attempt worth another.
type failure struct {
	status     int
	retryAfter time.Duration
	err        error
}

func (f *failure) Error() string { return f.err.Error() }
func (f *failure) Unwrap() error { return f.err }

// call sends r, retrying 429s, 5xx answers and connection errors with backoff (unless
// r.once, when the first such failure is returned as a *failure), and returns the
// body of a 2xx answer. A non-retryable answer is a *ResponseError, wrapping
// errContextMissing when the server lost the search context.
func (p *pull) call(r request) ([]byte, error) {
	for {
		body, err := p.attempt(r)
		if err == nil {
			p.retry.Reset()
			return body, nil
		}
		var f *failure
		if !errors.As(err, &f) || r.once {
			return nil, err
		}
		if err := p.backoff(r.op, f); err != nil {
			return nil, err
		}
	}
}

// backoff waits before retrying after f, or returns the *RetryError (or ctx's error)
// that ends the pull.
func (p *pull) backoff(op string, f *failure) error {
	d := max(p.retry.Next(), f.retryAfter)
	if p.retry.Failures() > p.cfg.MaxRetries {
		return &RetryError{Op: op, Attempts: p.retry.Failures(), Status: f.status, Err: f.err}
	}
	p.res.Retries++
	p.cfg.Logger.Debug("elastic: retrying", "op", op, "status", f.status, "attempt", p.retry.Failures(), "wait", d, "err", f.err)
	return p.src.sleep(p.ctx, d)
}

// attempt sends r once (paced) and classifies the answer.
func (p *pull) attempt(r request) ([]byte, error) {
	if err := p.pace(p.ctx); err != nil {
		return nil, err
	}
	return p.send(p.ctx, r)
}

func (p *pull) send(parent context.Context, r request) ([]byte, error) {
	ctx, cancel := context.WithTimeout(parent, p.cfg.RequestTimeout)
	defer cancel()
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, r.path, body)
	if err != nil {
		return nil, fmt.Errorf("elastic: %s: %w", r.op, err)
	}
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	p.res.Requests++
	res, err := p.src.tp.Perform(req)
	if err != nil {
		if parent.Err() != nil {
			return nil, parent.Err()
		}
		return nil, &failure{err: fmt.Errorf("%s: %w", r.op, err)}
	}
	defer res.Body.Close()
	// One buffer per pull: answers are megabytes, and growing a new one for each
	// costs more than decoding it.
	p.buf.Reset()
	if res.ContentLength > 0 && res.ContentLength < 1<<30 {
		p.buf.Grow(int(res.ContentLength))
	}
	_, err = p.buf.ReadFrom(res.Body)
	b := p.buf.Bytes()
	if err != nil {
		if parent.Err() != nil {
			return nil, parent.Err()
		}
		return nil, &failure{status: res.StatusCode, err: fmt.Errorf("%s: read answer: %w", r.op, err)}
	}
	switch {
	case res.StatusCode < 300:
		return b, nil
	case res.StatusCode == http.StatusTooManyRequests:
		p.res.Throttled++
		return nil, &failure{status: res.StatusCode, retryAfter: retryAfter(res.Header, p.src.now()),
			err: fmt.Errorf("%s: HTTP 429 %s", r.op, errorSummary(b))}
	}
	types, reason := errorTypes(b)
	if hasType(types, "search_context_missing_exception") {
		return nil, fmt.Errorf("%w: %w", &ResponseError{Op: r.op, Status: res.StatusCode, Type: "search_context_missing_exception", Reason: reason}, errContextMissing)
	}
	if res.StatusCode >= 500 {
		return nil, &failure{status: res.StatusCode, retryAfter: retryAfter(res.Header, p.src.now()),
			err: fmt.Errorf("%s: HTTP %d %s", r.op, res.StatusCode, errorSummary(b))}
	}
	typ := ""
	if len(types) > 0 {
		typ = types[0]
	}
	if reason == "" {
		reason = strings.TrimSpace(string(b[:min(len(b), 300)]))
	}
	return nil, &ResponseError{Op: r.op, Status: res.StatusCode, Type: typ, Reason: reason,
		product: res.Header.Get("X-Elastic-Product")}
}

// pace waits for the request's slot under Budget.MaxRequestsPerSecond.
func (p *pull) pace(ctx context.Context) error {
	if p.interval <= 0 {
		return nil
	}
	now := p.src.now()
	slot := p.lastSlot.Add(p.interval)
	if p.lastSlot.IsZero() || slot.Before(now) {
		slot = now
	}
	p.lastSlot = slot
	if d := slot.Sub(now); d > 0 {
		return p.src.sleep(ctx, d)
	}
	return nil
}

// retryAfter reads a Retry-After header: seconds or an HTTP date; 0 when absent.
func retryAfter(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, t.Sub(now))
	}
	return 0
}

// errorTypes collects every error "type" in an error body (error.type, root causes,
// caused_by chains, shard failures), and error.reason.
func errorTypes(b []byte) (types []string, reason string) {
	var v struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(b, &v) != nil || len(v.Error) == 0 {
		return nil, ""
	}
	var top struct {
		Reason string `json:"reason"`
	}
	if json.Unmarshal(v.Error, &top) != nil {
		// Some answers carry a plain string as error.
		var s string
		_ = json.Unmarshal(v.Error, &s)
		return nil, s
	}
	var walk func(any)
	walk = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			if t, ok := x["type"].(string); ok {
				types = append(types, t)
			}
			for _, c := range x {
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	var tree any
	_ = json.Unmarshal(v.Error, &tree)
	if m, ok := tree.(map[string]any); ok {
		if t, ok := m["type"].(string); ok {
			types = append(types, t) // the top-level type first
			delete(m, "type")
		}
	}
	walk(tree)
	return types, top.Reason
}

func hasType(types []string, t string) bool {
	for _, x := range types {
		if x == t {
			return true
		}
	}
	return false
}

// errorSummary is the error type and reason of an answer, or its start.
func errorSummary(b []byte) string {
	types, reason := errorTypes(b)
	if len(types) > 0 {
		return types[0] + ": " + reason
	}
	s := strings.TrimSpace(string(b[:min(len(b), 200)]))
	return s
}
