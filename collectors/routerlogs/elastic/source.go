// Package elastic reads router access-log entries from Elasticsearch or OpenSearch,
// indexed as Cloud Foundry's Logstash pipeline (logsearch-for-cloudfoundry) indexes
// RTR log messages, or with field names of one's own (Fields).
//
// A pull pages through the window in timestamp order with a point in time and
// search_after (Elasticsearch 7.10+, with the _shard_doc tiebreaker from 7.12;
// OpenSearch 2.4+, which has no _shard_doc before 3.3 and so is paged by seeking, see
// below), or with the scroll API on older servers or when asked. It talks to both with
// the Elasticsearch client's transport (elastic-transport-go), not the client itself,
// which refuses servers that do not say they are Elasticsearch.
//
// The cursor is the timestamp of the last document emitted and the index and _id of
// every document emitted with that very timestamp. A pull from a cursor opens a new
// point in time and seeks: timestamp >= that one, those documents excluded (must_not).
// It does not search_after the cursor's _shard_doc: that value (shard ordinal and
// Lucene doc id) means nothing outside the point in time that produced it — a merge
// renumbers docs, a new daily index shifts shard ordinals — so _shard_doc serves only
// search_after within one point in time. The same seek resumes a pull whose point in
// time or scroll expired, pages OpenSearch 2 (where each page is a seek) and restarts a
// scroll whose continuation failed (a scroll cannot be asked twice for a page: an
// answer lost after the server sent it would skip one). The cost is a cursor that
// grows with the documents sharing one timestamp (milliseconds in CF: a handful).
//
// Retries (429, 5xx, connection errors, partial results) back off exponentially with
// jitter up to a cap, honour Retry-After, and give up after Config.MaxRetries with a
// *RetryError; a page is emitted once, whatever was retried.
package elastic

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/elastic/elastic-transport-go/v8/elastictransport"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs"
	"github.com/cf-benchmark/cf-benchmark/internal/backoff"
	"github.com/cf-benchmark/cf-benchmark/internal/wait"
)

// Kind names this backend in cursors.
const Kind = "elasticsearch"

// Source reads router log entries from an Elasticsearch or OpenSearch cluster. It
// implements routerlogs.Source: one Pull at a time.
type Source struct {
	cfg      Config
	tp       *elastictransport.Client
	name     string
	includes []string
	schema   *schema

	mu     sync.Mutex
	server *server // what GET / said, once known

	// now and sleep are the clock, replaced in tests.
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error
}

var _ routerlogs.Source = (*Source)(nil)

// New returns a Source for cfg with defaults filled in. It does not contact the
// cluster.
func New(cfg Config) (*Source, error) {
	cfg = cfg.withDefaults()
	if len(cfg.URLs) == 0 {
		return nil, errors.New("elastic: no URL")
	}
	if cfg.Fields.Timestamp == "" {
		return nil, errors.New("elastic: the timestamp field cannot be dropped")
	}
	if cfg.Raw && cfg.Fields.Message == "" {
		return nil, errors.New("elastic: raw mode needs the message field")
	}
	var urls []*url.URL
	var names []string
	for _, raw := range cfg.URLs {
		u, err := url.Parse(strings.TrimRight(raw, "/"))
		if err != nil || u.Scheme == "" || u.Host == "" {
			return nil, fmt.Errorf("elastic: URL %q: want http(s)://host:port", raw)
		}
		if u.User != nil && cfg.Username == "" && cfg.APIKey == "" {
			cfg.Username = u.User.Username()
			cfg.Password, _ = u.User.Password()
		}
		u.User = nil
		urls = append(urls, u)
		names = append(names, u.String())
	}
	transport := cfg.Transport
	if transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		if cfg.InsecureSkipVerify {
			t.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // asked for
		}
		transport = t
	}
	tp, err := elastictransport.New(elastictransport.Config{
		URLs: urls, Username: cfg.Username, Password: cfg.Password, APIKey: cfg.APIKey,
		Transport: transport,
		// Retries are the pull's: with backoff, on 429 too, never twice for a scroll page.
		DisableRetry: true,
	})
	if err != nil {
		return nil, fmt.Errorf("elastic: %w", err)
	}
	includes := sourceIncludes(cfg.Fields, cfg.Raw)
	return &Source{
		cfg: cfg, tp: tp,
		name:     Kind + ":" + strings.Join(names, ",") + "/" + cfg.Index,
		includes: includes,
		schema:   newSchema(includes),
		now:      time.Now,
		sleep:    sleepCtx,
	}, nil
}

// String names the source without credentials, e.g.
// "elasticsearch:https://logs.example.com:9200/logs-app-*", for records of pulls.
func (s *Source) String() string { return s.name }

// sleepCtx waits for d, or returns ctx's error as soon as it ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if !wait.For(ctx, d) {
		return ctx.Err()
	}
	return nil
}

// position is the cursor's state.
type position struct {
	Source string `json:"source"`
	// TS is the sort value (epoch nanoseconds, in decimal: JSON numbers lose digits
	// beyond 2^53) of the last document emitted; Seen the index/_id of every document
	// emitted with that value.
	TS   string   `json:"ts"`
	Seen []string `json:"seen"`
}

// pull is one Pull's state.
type pull struct {
	src    *Source
	cfg    *Config
	ctx    context.Context
	q      routerlogs.Query
	budget routerlogs.Budget
	emit   func(routerlogs.Batch) error
	res    routerlogs.Result

	// The position: the last document consumed, if any.
	has  bool
	ts   int64
	seen map[string]struct{}
	keys []string // seen, in order, for the cursor

	nanos     bool            // sort values are nanoseconds (else milliseconds, before 7.0)
	from      int64           // the window's start in epoch nanoseconds
	wantTotal bool            // pulling from the beginning and no total yet: ask for it
	retry     backoff.Backoff // counts consecutive failed attempts
	interval  time.Duration
	lastSlot  time.Time
	buf       bytes.Buffer // the last answer's body
}

// Pull implements routerlogs.Source.
func (s *Source) Pull(ctx context.Context, q routerlogs.Query, from routerlogs.Cursor, b routerlogs.Budget, emit func(routerlogs.Batch) error) (routerlogs.Result, error) {
	p := &pull{src: s, cfg: &s.cfg, ctx: ctx, q: q, budget: b, emit: emit,
		res: routerlogs.Result{Total: -1}, seen: map[string]struct{}{}, nanos: true,
		retry: backoff.Backoff{First: s.cfg.RetryBackoff, Max: s.cfg.MaxBackoff}}
	if b.MaxRequestsPerSecond > 0 {
		p.interval = time.Duration(float64(time.Second) / b.MaxRequestsPerSecond)
	}
	var pos position
	ok, err := from.Decode(Kind, &pos)
	if err != nil {
		return p.res, err
	}
	if ok {
		if p.ts, err = strconv.ParseInt(pos.TS, 10, 64); err != nil {
			return p.res, fmt.Errorf("elastic: cursor timestamp %q: %w", pos.TS, err)
		}
		p.has = true
		for _, k := range pos.Seen {
			p.see(k)
		}
	}
	p.wantTotal = !p.has
	p.from = math.MinInt64
	if !q.From.IsZero() {
		p.from = q.From.UnixNano()
	}
	if err := ctx.Err(); err != nil {
		return p.res, err
	}
	if len(q.Apps) > 0 && s.cfg.Fields.App == "" && s.cfg.Fields.AppID == "" {
		return p.res, errors.New("elastic: the query names apps but no app field is mapped")
	}
	err = p.run()
	return p.res, err
}

func (p *pull) see(key string) {
	if _, dup := p.seen[key]; !dup {
		p.seen[key] = struct{}{}
		p.keys = append(p.keys, key)
	}
}

// errDone ends a pull that is complete (window or budget).
var errDone = errors.New("done")

// errNoProgress guards against a loop: a full page from a seek that brought nothing
// new means the server did not leave out the documents already emitted.
var errNoProgress = errors.New("elastic: a full page brought no new document: the server ignored the exclusion of documents already emitted")

func (p *pull) run() error {
	srv, err := p.src.detect(p)
	if err != nil {
		return err
	}
	p.nanos = srv.nanos()
	if p.cfg.Paging == PagingScroll {
		return p.scroll()
	}
	p.src.mu.Lock()
	api, shardDoc := srv.pit()
	p.src.mu.Unlock()
	switch api {
	case noPIT:
		if p.cfg.Paging == PagingPIT {
			return fmt.Errorf("elastic: %s %s has no point in time", srv.distribution, srv.number)
		}
		p.cfg.Logger.Info("elastic: no point in time on this server; scrolling", "server", srv.distribution, "version", srv.number)
		return p.scroll()
	case unknownPIT:
		// A server that would not say what it is: try Elasticsearch's API, then
		// OpenSearch's, then scroll.
		for _, a := range [...]pitAPI{esPIT, osPIT} {
			id, err := p.openPIT(a)
			if refused(err) {
				continue
			}
			if err != nil {
				return err
			}
			p.src.setProbed(a)
			return p.pit(a, false, id)
		}
		if p.cfg.Paging == PagingPIT {
			return errors.New("elastic: the server has no point in time API")
		}
		// Not remembered: OpenSearch refuses a point in time over no index, too.
		return p.scroll()
	}
	id, err := p.openPIT(api)
	if refused(err) && p.cfg.Paging != PagingPIT {
		// OpenSearch 2 refuses a point in time over patterns that match no index.
		p.cfg.Logger.Info("elastic: point in time refused; scrolling", "err", err)
		return p.scroll()
	}
	if err != nil {
		return err
	}
	return p.pit(api, shardDoc, id)
}

// refused reports whether err is a 4xx answer other than 401, 403 and 429: the
// server does not do what was asked, and another way may work.
func refused(err error) bool {
	var re *ResponseError
	return errors.As(err, &re) && re.Status >= 400 && re.Status < 500 &&
		re.Status != http.StatusUnauthorized && re.Status != http.StatusForbidden && !errors.Is(err, errContextMissing)
}

// pit pages with points in time, opening another when one is lost. id is an open
// point in time to start with, or "".
func (p *pull) pit(api pitAPI, shardDoc bool, id string) error {
	for {
		if id == "" {
			var err error
			if id, err = p.openPIT(api); err != nil {
				return err
			}
		}
		err := p.pitPages(shardDoc, &id)
		p.closePIT(api, id)
		id = ""
		switch {
		case err == errDone:
			return nil
		case errors.Is(err, errContextMissing):
			p.cfg.Logger.Info("elastic: point in time lost; opening another", "err", err)
			if err := p.backoff("search", &failure{err: err}); err != nil {
				return err
			}
		default:
			return err
		}
	}
}

func (p *pull) pitPages(shardDoc bool, id *string) error {
	var after []json.Number // search_after within this point in time; nil: seek
	for {
		size, seek := p.size(after == nil)
		body := p.searchBody(size, seek, shardDoc, false)
		body["pit"] = map[string]any{"id": *id, "keep_alive": keepAlive(p.cfg.KeepAlive)}
		if after != nil {
			body["search_after"] = after
		}
		resp, err := p.search(request{op: "search", method: http.MethodPost,
			path: "/_search?" + p.params("pit_id")}, body)
		if err != nil {
			return err
		}
		if resp.PitID != "" {
			*id = resp.PitID
		}
		hits := resp.Hits
		n, err := p.take(hits, len(hits) < size)
		if err != nil {
			return err
		}
		if seek && n == 0 && len(hits) == size {
			return errNoProgress
		}
		if len(hits) < size {
			return errDone
		}
		if shardDoc {
			after = hits[len(hits)-1].Sort
		}
	}
}

// size is the page size: the budget's remainder at most. seek says whether the page
// starts from the position (rather than search_after).
func (p *pull) size(seek bool) (int, bool) {
	n := int64(p.cfg.PageSize)
	if p.budget.MaxDocuments > 0 {
		n = min(n, p.budget.MaxDocuments-p.res.Retrieved)
	}
	return int(n), seek && p.has
}

// scroll pages with the scroll API, starting a new scroll from the position whenever
// one fails or expires.
func (p *pull) scroll() error {
	for {
		size, seek := p.size(true)
		body := p.searchBody(size, seek, false, true)
		resp, err := p.search(request{op: "search", method: http.MethodPost,
			path: "/" + p.cfg.Index + "/_search?scroll=" + keepAlive(p.cfg.KeepAlive) + "&" + p.params("_scroll_id")}, body)
		if err != nil {
			return err
		}
		id := resp.ScrollID
		err = p.scrollPages(resp, &id)
		if id != "" {
			p.clearScroll(id)
		}
		var f *failure
		switch {
		case err == errDone:
			return nil
		case errors.Is(err, errContextMissing):
			p.cfg.Logger.Info("elastic: scroll lost; starting another", "err", err)
			if err := p.backoff("scroll", &failure{err: err}); err != nil {
				return err
			}
		case errors.As(err, &f):
			// The failed continuation may have moved the scroll: start over from the
			// position rather than risk a page.
			if err := p.backoff("scroll", f); err != nil {
				return err
			}
		default:
			return err
		}
	}
}

func (p *pull) scrollPages(resp *searchAnswer, id *string) error {
	for {
		hits := resp.Hits
		if _, err := p.take(hits, len(hits) == 0); err != nil {
			return err
		}
		if len(hits) == 0 {
			return errDone
		}
		b, err := json.Marshal(map[string]any{"scroll": keepAlive(p.cfg.KeepAlive), "scroll_id": *id})
		if err != nil {
			return err
		}
		resp, err = p.search(request{op: "scroll", method: http.MethodPost, once: true,
			path: "/_search/scroll?" + p.filterPath("_scroll_id"), body: b}, nil)
		if err != nil {
			return err
		}
		if resp.ScrollID != "" {
			*id = resp.ScrollID
		}
	}
}

// take consumes a page: it skips what the position says was emitted, decodes the
// rest up to the budget, advances the position and emits the batch. end says the
// page is the window's last. It returns errDone when the budget is spent.
func (p *pull) take(hits []hit, end bool) (int, error) {
	batch := routerlogs.Batch{Entries: make([]routerlogs.Entry, 0, len(hits))}
	spent := false
	consumed := 0
	for i := range hits {
		h := &hits[i]
		ts, err := p.sortTime(h)
		if err != nil {
			return consumed, err
		}
		if ts < p.from {
			// A range on a date (milliseconds) field rounds a From with a fraction
			// of a millisecond down.
			continue
		}
		key := h.Index + "/" + h.ID
		if p.has {
			if ts < p.ts {
				return consumed, fmt.Errorf("elastic: document %s sorts before the position (%d < %d): is %s a date field?", key, ts, p.ts, p.cfg.Fields.Timestamp)
			}
			if _, dup := p.seen[key]; dup && ts == p.ts {
				continue
			}
		}
		e, ok := decodeEntry(p.src.schema, &p.cfg.Fields, p.cfg.Raw, h, time.Unix(0, ts).UTC())
		if ok {
			e.DocID = h.ID
			batch.Entries = append(batch.Entries, e)
		} else {
			batch.Unparseable++
		}
		if !p.has || ts != p.ts {
			p.has, p.ts = true, ts
			clear(p.seen)
			p.keys = p.keys[:0]
		}
		p.see(key)
		consumed++
		p.res.Retrieved++
		if p.budget.MaxDocuments > 0 && p.res.Retrieved >= p.budget.MaxDocuments {
			spent = true
			p.res.BudgetExhausted = i < len(hits)-1 || !end
			break
		}
	}
	if len(batch.Entries) > 0 || batch.Unparseable > 0 {
		next, err := routerlogs.NewCursor(position{Source: Kind, TS: strconv.FormatInt(p.ts, 10), Seen: p.keys})
		if err != nil {
			return consumed, err
		}
		batch.Next = next
		if err := p.emit(batch); err != nil {
			return consumed, err
		}
	}
	if spent {
		return consumed, errDone
	}
	p.retry.Reset()
	return consumed, nil
}

// sortTime is a hit's timestamp in epoch nanoseconds, from its first sort value.
func (p *pull) sortTime(h *hit) (int64, error) {
	if len(h.Sort) == 0 {
		return 0, fmt.Errorf("elastic: document %s/%s has no sort value", h.Index, h.ID)
	}
	v, err := h.Sort[0].Int64()
	if err != nil {
		return 0, fmt.Errorf("elastic: document %s/%s: sort value %s is not a date", h.Index, h.ID, h.Sort[0])
	}
	if !p.nanos {
		v *= int64(time.Millisecond)
	}
	return v, nil
}

// search sends a search (body marshalled into r.body unless nil) and checks that
// every shard answered in time.
func (p *pull) search(r request, body map[string]any) (*searchAnswer, error) {
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("elastic: encode search: %w", err)
		}
		r.body = b
	}
	for {
		b, err := p.call(r)
		if err != nil {
			return nil, err
		}
		resp, err := p.src.schema.decode(b)
		if err != nil {
			return nil, fmt.Errorf("elastic: decode %s answer: %w", r.op, err)
		}
		if resp.Shards.Failed == 0 && !resp.TimedOut {
			if p.wantTotal {
				p.wantTotal = false
				p.res.Total = total(resp.Total)
			}
			return resp, nil
		}
		// Partial results are a gap: never take them.
		for _, f := range resp.Shards.Failures {
			if f.Reason.Type == "search_context_missing_exception" {
				return nil, fmt.Errorf("elastic: %s: %w", r.op, errContextMissing)
			}
		}
		f := &failure{status: http.StatusOK, err: fmt.Errorf("%s: %d shards failed (timed out: %v)", r.op, resp.Shards.Failed, resp.TimedOut)}
		if r.once {
			return nil, f
		}
		if err := p.backoff(r.op, f); err != nil {
			return nil, err
		}
	}
}

func total(raw json.RawMessage) int64 {
	var t struct {
		Value    int64  `json:"value"`
		Relation string `json:"relation"`
	}
	if json.Unmarshal(raw, &t) == nil {
		if t.Relation == "eq" {
			return t.Value
		}
		return -1
	}
	var n int64
	if json.Unmarshal(raw, &n) == nil {
		return n
	}
	return -1
}

// clearScroll and closePIT free the server's context, once, even when the pull's
// context has ended.
func (p *pull) clearScroll(id string) {
	b, _ := json.Marshal(map[string]any{"scroll_id": []string{id}})
	p.release(request{op: "clear scroll", method: http.MethodDelete, path: "/_search/scroll", body: b})
}

func (p *pull) release(r request) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(p.ctx), 10*time.Second)
	defer cancel()
	// A few quick tries: a context left open holds the server's resources until its
	// keep-alive runs out.
	for attempt := 1; ; attempt++ {
		if err := p.pace(ctx); err != nil {
			return
		}
		_, err := p.send(ctx, r)
		var f *failure
		if err == nil || errors.Is(err, errContextMissing) {
			return
		}
		if !errors.As(err, &f) || attempt == 3 {
			p.cfg.Logger.Debug("elastic: releasing a search context", "op", r.op, "err", err)
			return
		}
		if p.src.sleep(ctx, max(f.retryAfter, p.cfg.RetryBackoff)) != nil {
			return
		}
	}
}
