package relay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/sample"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// Client is one generator instance's side of a relay: a worker.Backend over HTTP, with
// connections of its own (a few keep-alive connections to the relay, none to the
// database). It is safe for concurrent use.
type Client struct {
	base  string
	token string
	http  *http.Client
}

// NewClient returns a client of the relay at base (http://host:port) with token.
// connectTo, when set, is the host:port dialled instead of base's host, which stays the
// Host header: a router whose apps domain does not resolve (the local foundation's).
func NewClient(base, token, connectTo string) (*Client, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("relay url %q: want http(s)://host[:port]", base)
	}
	if token == "" {
		return nil, fmt.Errorf("relay %s: no token", u.Host)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// The plan poll, a step record and a flush may overlap; more waits for a connection.
	tr.MaxIdleConnsPerHost, tr.MaxConnsPerHost = 4, 4
	if connectTo != "" {
		var d net.Dialer
		tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, connectTo)
		}
	}
	return &Client{base: strings.TrimRight(base, "/"), token: token, http: &http.Client{Transport: tr}}, nil
}

// Close releases the client's idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

// do sends one request and decodes a JSON answer into out (when not nil).
func (c *Client) do(ctx context.Context, method, path string, body io.Reader, contentType string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("relay: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		err := fmt.Errorf("relay %s %s: %s: %s", method, strings.SplitN(path, "?", 2)[0], resp.Status, strings.TrimSpace(string(msg)))
		if resp.StatusCode == http.StatusConflict {
			err = fmt.Errorf("%w (%w)", resultsdb.ErrRunNotRunning, err)
		}
		return err
	}
	if out == nil {
		io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("relay %s %s: read answer: %w", method, path, err)
	}
	return nil
}

func (c *Client) post(ctx context.Context, path string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return c.do(ctx, http.MethodPost, path, bytes.NewReader(b), "application/json", out)
}

// Assignment reads the plan for app (see resultsdb.Store.Assignment).
func (c *Client) Assignment(ctx context.Context, app string) (*resultsdb.Assignment, error) {
	var a *resultsdb.Assignment
	if err := c.do(ctx, http.MethodGet, "/v1/assignment?app="+url.QueryEscape(app), nil, "", &a); err != nil {
		return nil, err
	}
	return a, nil
}

// JoinRun registers an instance for a run and returns its id (see resultsdb.Store.JoinRun).
func (c *Client) JoinRun(ctx context.Context, w resultsdb.Worker) (int32, error) {
	var out struct{ ID int32 }
	if err := c.post(ctx, "/v1/workers", w, &out); err != nil {
		return 0, err
	}
	return out.ID, nil
}

// Heartbeat hands the instance's counters to the relay, which writes them within its
// BeatEvery.
func (c *Client) Heartbeat(ctx context.Context, id int32, wc resultsdb.WorkerCounters) error {
	return c.post(ctx, fmt.Sprintf("/v1/workers/%d/heartbeat", id), wc, nil)
}

// JoinStep records that the instance began st at joined (the database's clock).
func (c *Client) JoinStep(ctx context.Context, id int32, st *resultsdb.Step, joined time.Time, late bool) error {
	return c.post(ctx, fmt.Sprintf("/v1/workers/%d/steps/%d/join", id, st.Index), joinBody{Step: *st, Joined: joined, Late: late}, nil)
}

// FinishStep records that every sample the instance took in step is stored.
func (c *Client) FinishStep(ctx context.Context, id int32, step int, sent, missed uint64) error {
	return c.post(ctx, fmt.Sprintf("/v1/workers/%d/steps/%d/finish", id, step), finishBody{Sent: sent, Missed: missed}, nil)
}

// StopWorker marks the instance stopped with its final counters.
func (c *Client) StopWorker(ctx context.Context, id int32, wc resultsdb.WorkerCounters) error {
	return c.post(ctx, fmt.Sprintf("/v1/workers/%d/stop", id), wc, nil)
}

// CopySamples posts one batch and returns once the relay has stored it
// (resultsdb.SampleSink).
func (c *Client) CopySamples(ctx context.Context, worker int32, batch [][]sample.Sample) error {
	return c.do(ctx, http.MethodPost, fmt.Sprintf("/v1/workers/%d/samples", worker), resultsdb.CopyStream(worker, batch), "application/octet-stream", nil)
}

// NewSampleWriter returns a writer whose batches go through the relay.
func (c *Client) NewSampleWriter(worker int32, opts resultsdb.WriterOptions) (*resultsdb.SampleWriter, error) {
	return resultsdb.NewSampleWriter(c, worker, opts)
}

// Stats reads what the relay did so far.
func (c *Client) Stats(ctx context.Context) (Stats, error) {
	var st Stats
	err := c.do(ctx, http.MethodGet, "/v1/stats", nil, "", &st)
	return st, err
}
