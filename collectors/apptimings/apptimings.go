// Package apptimings collects the in-app timings the sample apps record per request
// (time waiting for a pooled DB connection, in queries, in all), keyed by the B3 trace
// id the generator sent. The apps keep them in a fixed-size buffer and hand them over on
// a flush endpoint (the contract is in apps/README.md); this package calls that
// endpoint on one instance at a time, through the router, choosing the instance with
// gorouter's X-Cf-App-Instance header.
package apptimings

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/sample"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// MaxBody bounds a flush answer: 100,000 rows (the apps' default capacity) take about
// 8 MB; an answer beyond this is refused rather than read into memory.
const MaxBody = 64 << 20

// Config says how to reach an app's instances.
type Config struct {
	// URL is the app's route, e.g. https://bulletin-java.apps.example.com.
	URL string
	// ConnectTo, when set, is the host:port dialled instead of the URL's host (the local
	// foundation's router).
	ConnectTo string
	// Path is the timings endpoint (spec collectors.app_timings.path); flush is Path +
	// "/flush".
	Path string
	// Token is sent as a bearer token (the app's CFBENCH_TIMINGS_TOKEN); "" for none.
	Token string
	// AppGUID addresses instances in X-Cf-App-Instance.
	AppGUID string
	// Timeout bounds one flush (default 60 s).
	Timeout time.Duration
}

// Batch is what one instance handed over.
type Batch struct {
	InstanceIndex int
	Capacity      int
	// Dropped is how many rows the instance could not keep since its last flush.
	Dropped int64
	Rows    []resultsdb.AppTiming
}

// Client flushes the instances of one app.
type Client struct {
	cfg  Config
	http *http.Client
}

// New returns a Client for cfg.
func New(cfg Config) (*Client, error) {
	if cfg.URL == "" || cfg.AppGUID == "" || !strings.HasPrefix(cfg.Path, "/") {
		return nil, fmt.Errorf("app timings: URL, app GUID and a path starting with / are needed")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 60 * time.Second
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second}
	dial := dialer.DialContext
	if to := cfg.ConnectTo; to != "" {
		dial = func(ctx context.Context, network, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, network, to)
		}
	}
	return &Client{cfg: cfg, http: &http.Client{Timeout: cfg.Timeout,
		Transport: &http.Transport{DialContext: dial, Proxy: nil, MaxIdleConnsPerHost: 2}}}, nil
}

// Close closes idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

// Flush takes the buffered timings of instance index. The instance clears them when it
// answers, so a Batch that was returned must be stored.
func (c *Client) Flush(ctx context.Context, index int) (*Batch, error) {
	url := strings.TrimRight(c.cfg.URL, "/") + c.cfg.Path + "/flush"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return nil, fmt.Errorf("app timings: %w", err)
	}
	req.Header.Set("X-Cf-App-Instance", fmt.Sprintf("%s:%d", c.cfg.AppGUID, index))
	if c.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("app timings: flush instance %d: %w", index, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("app timings: flush instance %d: POST %s: %s: %s", index, url, resp.Status, strings.TrimSpace(string(msg)))
	}
	b, err := Decode(io.LimitReader(resp.Body, MaxBody+1))
	if err != nil {
		return nil, fmt.Errorf("app timings: flush instance %d: %w", index, err)
	}
	if b.InstanceIndex != index {
		return nil, fmt.Errorf("app timings: flush instance %d: instance %d answered (does the router honour X-Cf-App-Instance?)", index, b.InstanceIndex)
	}
	return b, nil
}

// Decode reads a flush answer: {"instance_index":N,"capacity":N,"dropped":N,"rows":[[
// "<32 hex trace id>", at_unix_us, pool_wait_us, query_us, total_us], …]}. A row that
// does not fit is an error naming it: the answer is not half-stored.
func Decode(r io.Reader) (*Batch, error) {
	var raw struct {
		InstanceIndex *int              `json:"instance_index"`
		Capacity      int               `json:"capacity"`
		Dropped       int64             `json:"dropped"`
		Rows          []json.RawMessage `json:"rows"`
	}
	dec := json.NewDecoder(r)
	if err := dec.Decode(&raw); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = fmt.Errorf("answer cut short or over %d bytes", MaxBody)
		}
		return nil, fmt.Errorf("flush answer: %w", err)
	}
	if raw.InstanceIndex == nil || raw.Rows == nil {
		return nil, errors.New("flush answer: instance_index and rows are required")
	}
	b := &Batch{InstanceIndex: *raw.InstanceIndex, Capacity: raw.Capacity, Dropped: raw.Dropped,
		Rows: make([]resultsdb.AppTiming, len(raw.Rows))}
	for i, m := range raw.Rows {
		if err := decodeRow(m, &b.Rows[i]); err != nil {
			return nil, fmt.Errorf("flush answer: rows[%d]: %w", i, err)
		}
	}
	return b, nil
}

func decodeRow(m json.RawMessage, t *resultsdb.AppTiming) error {
	var row []json.RawMessage
	if err := json.Unmarshal(m, &row); err != nil || len(row) != 5 {
		return errors.New(`want ["trace id", at_us, pool_wait_us, query_us, total_us]`)
	}
	var id string
	if err := json.Unmarshal(row[0], &id); err != nil {
		return errors.New("trace id: want a string")
	}
	tid, err := sample.ParseTraceID(id)
	if err != nil {
		return fmt.Errorf("trace id: %w", err)
	}
	var us [4]int64
	for k, name := range []string{"at", "pool_wait_us", "query_us", "total_us"} {
		if err := json.Unmarshal(row[k+1], &us[k]); err != nil || us[k] < 0 {
			return fmt.Errorf("%s: want a non-negative integer, got %s", name, row[k+1])
		}
	}
	t.TraceID, t.At = tid, time.UnixMicro(us[0]).UTC()
	t.PoolWait, t.Query, t.Total = time.Duration(us[1])*time.Microsecond, time.Duration(us[2])*time.Microsecond, time.Duration(us[3])*time.Microsecond
	return nil
}
