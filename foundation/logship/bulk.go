package logship

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/elastic/elastic-transport-go/v8/elastictransport"
)

// newTransport is the client of Elasticsearch at rawURL over rt; esRequest sends the
// shipper's two kinds of request through it. Neither the elasticsearch package's client
// nor its esapi: the first brings in its typed API (some 860 packages, over two minutes
// of CPU on a cold build of the plugin), the second is one package of every API's
// request builders that takes 25 s to compile, alone, on the plugin's critical path.
func newTransport(rawURL string, rt http.RoundTripper) (*elastictransport.Client, error) {
	if rawURL == "" {
		return nil, errors.New("no Elasticsearch URL")
	}
	u, err := url.Parse(strings.TrimRight(rawURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// Not err itself: it quotes the URL, which may carry a password.
		return nil, errors.New("elasticsearch url: want http(s)://host:port")
	}
	tp, err := elastictransport.NewClient(
		elastictransport.WithURLs(u),
		elastictransport.WithTransport(rt),
		// Retries are ours: with backoff, on 429 too, and per bulk item.
		elastictransport.WithDisableRetry(),
	)
	if err != nil {
		return nil, fmt.Errorf("elasticsearch client for %s: %w", u.Redacted(), err)
	}
	return tp, nil
}

// esRequest sends body to path (with query) through the transport, which adds the
// URL's scheme, host, path prefix and credentials. The caller closes the response's
// body.
func (s *Shipper) esRequest(ctx context.Context, method, path string, query url.Values, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http:///", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.URL.Path = path
	req.URL.RawQuery = query.Encode()
	req.Header.Set("Content-Type", "application/json")
	return s.es.Perform(req)
}

// bulkResponse is the part of a bulk response filter_path keeps.
type bulkResponse struct {
	Errors bool                      `json:"errors"`
	Items  []map[string]bulkItemResp `json:"items"`
}

type bulkItemResp struct {
	Status int `json:"status"`
	Error  *struct {
		Type   string `json:"type"`
		Reason string `json:"reason"`
	} `json:"error"`
}

// bulk sends items once. It returns the items worth trying again (429s, 5xx,
// connection errors) and counts the others as shipped or failed.
func (s *Shipper) bulk(ctx context.Context, items []item) (retry []item, err error) {
	if s.esErr != nil {
		return items, s.esErr
	}
	var body []byte
	for _, it := range items {
		body = append(body, it.body...)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	res, err := s.esRequest(ctx, http.MethodPost, "/_bulk",
		url.Values{"filter_path": {"errors,items.*.status,items.*.error.type,items.*.error.reason"}}, body)
	if err != nil {
		return items, fmt.Errorf("bulk request: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode == http.StatusTooManyRequests || res.StatusCode >= 500 {
		_, _ = io.Copy(io.Discard, res.Body)
		return items, fmt.Errorf("bulk request: %s", res.Status)
	}
	if res.StatusCode > 299 {
		s.settle(int64(len(items)), false)
		return nil, fmt.Errorf("bulk request rejected: %s", errorText(res))
	}
	var br bulkResponse
	if err := json.NewDecoder(res.Body).Decode(&br); err != nil {
		return items, fmt.Errorf("decode bulk response: %w", err)
	}
	if !br.Errors {
		s.settle(int64(len(items)), true)
		return nil, nil
	}
	if len(br.Items) != len(items) {
		return items, fmt.Errorf("bulk response has %d items for %d documents", len(br.Items), len(items))
	}
	var ok, failed int64
	var firstErr string
	for i, it := range br.Items {
		for _, r := range it { // one action per item: create
			switch {
			case r.Status < 300, r.Status == http.StatusConflict:
				// 409: this _id was indexed by an attempt whose answer got lost.
				ok++
			case r.Status == http.StatusTooManyRequests || r.Status >= 500:
				retry = append(retry, items[i])
			default:
				failed++
				if firstErr == "" && r.Error != nil {
					firstErr = r.Error.Type + ": " + r.Error.Reason
				}
			}
		}
	}
	s.shipped.Add(ok)
	s.failed.Add(failed)
	s.buffered.Add(-(ok + failed))
	if failed > 0 {
		s.logger.Warn("logship: documents rejected", "documents", failed, "first_error", firstErr)
	}
	if len(retry) > 0 {
		err = fmt.Errorf("%d of %d documents rejected for now (429/5xx)", len(retry), len(items))
	}
	return retry, err
}

// installTemplate puts the index template; a refusal is logged once and shipping goes
// on without it, a connection error is retried before the next bulk request.
func (s *Shipper) installTemplate(ctx context.Context) {
	pattern := templatePattern(s.cfg.Index)
	if pattern == "" || s.esErr != nil {
		s.templateDone = true
		return
	}
	name := "cf-benchmark-" + strings.Trim(strings.Map(func(c rune) rune {
		if c == '*' {
			return -1
		}
		return c
	}, pattern), "-_.")
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	res, err := s.esRequest(ctx, http.MethodPut, "/_index_template/"+name, nil, indexTemplate(pattern))
	if err != nil {
		s.logger.Debug("logship: put index template", "err", err)
		return
	}
	defer res.Body.Close()
	if res.StatusCode == http.StatusTooManyRequests || res.StatusCode >= 500 {
		return
	}
	s.templateDone = true
	if res.StatusCode > 299 {
		s.logger.Warn("logship: index template refused; indexing with dynamic mappings", "template", name, "err", errorText(res))
	}
}

func errorText(res *http.Response) string {
	b, _ := io.ReadAll(io.LimitReader(res.Body, 512))
	return res.Status + " " + strings.TrimSpace(string(b))
}
