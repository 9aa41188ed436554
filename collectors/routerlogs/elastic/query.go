package elastic

import (
	"strings"
	"time"
)

// searchBody is the search for a page: the window, the apps, the position when
// seeking, sorted by timestamp (then _shard_doc).
func (p *pull) searchBody(size int, seek, shardDoc, scroll bool) map[string]any {
	f := &p.cfg.Fields
	filter := []any{map[string]any{"exists": map[string]any{"field": f.Timestamp}}}
	if r := p.timeRange(p.q.From, p.q.To); r != nil {
		filter = append(filter, map[string]any{"range": map[string]any{f.Timestamp: r}})
	}
	var mustNot []any
	if seek {
		filter = append(filter, map[string]any{"range": map[string]any{f.Timestamp: p.timeRange(time.Unix(0, p.ts), time.Time{})}})
		mustNot = p.seenQueries()
	}
	if len(p.q.Apps) > 0 {
		// By name or by GUID.
		var should []any
		for i, field := range []string{f.App, f.AppID} {
			if field != "" && (i == 0 || field != f.App) {
				should = append(should, map[string]any{"terms": map[string]any{field: p.q.Apps}})
			}
		}
		filter = append(filter, map[string]any{"bool": map[string]any{"should": should, "minimum_should_match": 1}})
	}
	tsSort := map[string]any{"order": "asc"}
	if p.nanos {
		// date and date_nanos fields (and indices mixing them) alike sort in nanoseconds.
		tsSort["numeric_type"] = "date_nanos"
	}
	sort := []any{map[string]any{f.Timestamp: tsSort}}
	if shardDoc {
		sort = append(sort, map[string]any{"_shard_doc": "asc"})
	}
	query := map[string]any{"filter": filter}
	if len(mustNot) > 0 {
		query["must_not"] = mustNot
	}
	body := map[string]any{
		"size":  size,
		"query": map[string]any{"bool": query},
		"sort":  sort,
	}
	if p.wantTotal {
		body["track_total_hits"] = true
	} else if !scroll {
		body["track_total_hits"] = false // a scroll refuses false
	}
	if !p.cfg.NoSourceFilter {
		body["_source"] = map[string]any{"includes": p.src.includes}
	}
	return body
}

// seenQueries match the documents emitted with the position's timestamp, so that a
// seek leaves them out: an _id is unique within its index only.
func (p *pull) seenQueries() []any {
	byIndex := map[string][]string{}
	var order []string
	for _, k := range p.keys {
		index, id, _ := strings.Cut(k, "/") // index names have no '/'
		if _, ok := byIndex[index]; !ok {
			order = append(order, index)
		}
		byIndex[index] = append(byIndex[index], id)
	}
	var qs []any
	for _, index := range order {
		qs = append(qs, map[string]any{"bool": map[string]any{"filter": []any{
			map[string]any{"term": map[string]any{"_index": index}},
			map[string]any{"ids": map[string]any{"values": byIndex[index]}},
		}}})
	}
	return qs
}

// timeRange is a range on the timestamp field from from to to (zero: open), nil when
// both are open.
func (p *pull) timeRange(from, to time.Time) map[string]any {
	if from.IsZero() && to.IsZero() {
		return nil
	}
	r := map[string]any{}
	if p.nanos {
		// All nine fractional digits: the servers fill missing date components with
		// their maximum for lte (RFC3339Nano's "23:56:00Z" would reach 23:56:00.999999999).
		const layout = "2006-01-02T15:04:05.000000000Z"
		r["format"] = "strict_date_optional_time_nanos"
		if !from.IsZero() {
			r["gte"] = from.UTC().Format(layout)
		}
		if !to.IsZero() {
			r["lte"] = to.UTC().Format(layout)
		}
		return r
	}
	r["format"] = "epoch_millis"
	if !from.IsZero() {
		r["gte"] = from.UnixMilli()
	}
	if !to.IsZero() {
		r["lte"] = to.UnixMilli()
	}
	return r
}

// params is a search's query string: filter_path and a refusal of partial results (a
// shard missing would otherwise be a silent gap).
func (p *pull) params(extra string) string {
	q := p.filterPath(extra)
	if q != "" {
		q += "&"
	}
	return q + "allow_partial_search_results=false"
}

func (p *pull) filterPath(extra string) string {
	if p.cfg.NoFilterPath {
		return ""
	}
	return "filter_path=" + extra + ",timed_out,_shards.failed,_shards.failures.reason.type,hits.total,hits.hits._index,hits.hits._id,hits.hits._source,hits.hits.sort"
}
