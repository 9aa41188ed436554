package logcache

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// ErrTokenRejected is a read Log Cache answered 404 with no body while its
// /api/v1/meta answered the same token so too: its auth proxy's answer to an expired
// or invalid token, which must not read as "no data". A Doer that is a TokenRenewer
// has renewed the token once before the read fails with it.
var ErrTokenRejected = errors.New("log cache rejected the access token (404 with no body to a read and to /api/v1/meta): it expired or is invalid")

// TokenRenewer is a Doer that can renew the token it sends (platform.AuthClient):
// RenewToken renews it after Log Cache rejected a request sent at sent, unless a
// renewal since did already; an error says it could not.
type TokenRenewer interface {
	RenewToken(ctx context.Context, sent time.Time) error
}

// Eviction is a stretch of an app's container metrics that Log Cache no longer held
// when the poller came to read it: envelopes of [From, Before) were dropped unread.
// Log Cache keeps at most max_per_source envelopes of a source (100,000 on
// cf-deployment, an app's router access logs included), so at 1,000 requests/s an app's
// metrics older than about 100 s are gone; and a restarted Log Cache starts empty. No
// read says so: only /api/v1/meta (count, expired, oldest) shows it.
type Eviction struct {
	AppName, AppGUID string
	From, Before     time.Time
	// Meta as read when the eviction was seen: the oldest envelope held, how many the
	// source has dropped and holds.
	Oldest         time.Time
	Expired, Count int64
	// Restarted is set when meta's expired count went down: Log Cache restarted and
	// lost all it held, rather than evicting the oldest.
	Restarted bool
}

// String is the sentence a report gives, e.g. "container metrics for app web before
// 12:01:40Z were evicted from Log Cache (meta: oldest 12:01:40Z, expired 1200)".
func (e Eviction) String() string {
	const layout = "15:04:05.000Z07:00"
	what := "were evicted from Log Cache"
	if e.Restarted {
		what = "were lost: Log Cache restarted empty"
	}
	return fmt.Sprintf("container metrics for app %s from %s before %s %s (meta: oldest %s, expired %d, count %d)",
		e.AppName, e.From.UTC().Format(layout), e.Before.UTC().Format(layout), what, e.Oldest.UTC().Format(layout), e.Expired, e.Count)
}

// metaInfo is what /api/v1/meta says of one source, timestamps in ns.
type metaInfo struct {
	count, expired, oldest, newest int64
}

// meta reads /api/v1/meta. rejected says Log Cache answered 404 with no body: its auth
// proxy refusing the token.
func (p *Poller) meta(ctx context.Context) (_ map[string]metaInfo, rejected bool, _ error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.cfg.URL+"/api/v1/meta", nil)
	if err != nil {
		return nil, false, err
	}
	resp, err := p.cfg.Client.Do(req)
	if err != nil {
		return nil, false, fmt.Errorf("log cache meta: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, false, fmt.Errorf("log cache meta: %w", err)
	}
	if resp.StatusCode == http.StatusNotFound && len(bytes.TrimSpace(body)) == 0 {
		return nil, true, nil
	}
	if resp.StatusCode != http.StatusOK {
		return nil, false, fmt.Errorf("log cache meta: %s: %s", resp.Status, snippet(body))
	}
	return decodeMeta(body)
}

// decodeMeta decodes a logcache.v1.MetaResponse as the auth proxy writes it (protojson:
// lowerCamelCase, int64 as strings) or as the gateway does (snake_case).
func decodeMeta(body []byte) (map[string]metaInfo, bool, error) {
	var r struct {
		Meta map[string]map[string]json.RawMessage `json:"meta"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, false, fmt.Errorf("log cache meta: decode: %w", err)
	}
	num := func(m map[string]json.RawMessage, names ...string) int64 {
		for _, n := range names {
			if v, ok := m[n]; ok {
				i, _ := strconv.ParseInt(string(bytes.Trim(v, `"`)), 10, 64)
				return i
			}
		}
		return 0
	}
	out := make(map[string]metaInfo, len(r.Meta))
	for id, m := range r.Meta {
		out[id] = metaInfo{count: num(m, "count"), expired: num(m, "expired"),
			oldest: num(m, "oldestTimestamp", "oldest_timestamp"), newest: num(m, "newestTimestamp", "newest_timestamp")}
	}
	return out, false, nil
}

// tokenRejected reports whether Log Cache refuses the token now (meta answers 404 with
// no body). A meta that fails otherwise is taken as not refusing it.
func (p *Poller) tokenRejected(ctx context.Context) bool {
	_, rejected, _ := p.meta(ctx)
	return rejected
}

// renewToken renews the Doer's token after a rejection of a request sent at sent, or
// says that it cannot.
func (p *Poller) renewToken(ctx context.Context, sent time.Time) error {
	r, ok := p.cfg.Client.(TokenRenewer)
	if !ok {
		return ErrTokenRejected
	}
	p.log.Info("log cache rejected the access token (404 with no body): renewing it")
	if err := r.RenewToken(ctx, sent); err != nil {
		return fmt.Errorf("%w; renewing it failed: %w", ErrTokenRejected, err)
	}
	return nil
}

// checkMeta reads meta at the start of a poll: with a rejected token it renews it
// once (so the reads go with the new one) and fails when that did not help; with meta
// it notes each source's evictions since its previous read. A meta that fails
// otherwise leaves the reads to go on without it.
func (p *Poller) checkMeta(ctx context.Context) error {
	sent := time.Now()
	meta, rejected, err := p.meta(ctx)
	if rejected {
		if err := p.renewToken(ctx, sent); err != nil {
			return err
		}
		if meta, rejected, err = p.meta(ctx); rejected {
			return ErrTokenRejected
		}
	}
	if err != nil {
		p.log.Debug("read log cache meta", "err", err)
		return nil
	}
	for id, s := range p.sources {
		m, ok := meta[id]
		if !ok {
			continue
		}
		from := s.cursor
		if from == 0 {
			from = p.cfg.Since.UnixNano()
		}
		if m.oldest > from && m.expired != s.expired {
			p.noteEviction(Eviction{AppName: s.target.AppName, AppGUID: id, From: time.Unix(0, from), Before: time.Unix(0, m.oldest),
				Oldest: time.Unix(0, m.oldest), Expired: m.expired, Count: m.count, Restarted: m.expired < s.expired})
		}
		s.expired = m.expired
	}
	return nil
}

// noteEviction records e, merged into the app's previous eviction when they meet.
func (p *Poller) noteEviction(e Eviction) {
	p.evictMu.Lock()
	defer p.evictMu.Unlock()
	for i := len(p.evictions) - 1; i >= 0; i-- {
		last := &p.evictions[i]
		if last.AppGUID != e.AppGUID {
			continue
		}
		if !e.From.After(last.Before) && !e.Restarted && !last.Restarted {
			last.Before, last.Oldest, last.Expired, last.Count = e.Before, e.Oldest, e.Expired, e.Count
			p.log.Warn("log cache evicted container metrics before they were read", "eviction", last.String())
			return
		}
		break
	}
	p.evictions = append(p.evictions, e)
	p.log.Warn("log cache evicted container metrics before they were read", "eviction", e.String())
}

// Evictions are the stretches of container metrics Log Cache dropped before the poller
// read them, in the order seen (one per app and stretch). The slice is the caller's.
func (p *Poller) Evictions() []Eviction {
	p.evictMu.Lock()
	defer p.evictMu.Unlock()
	return append([]Eviction(nil), p.evictions...)
}
