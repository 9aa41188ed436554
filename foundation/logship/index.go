package logship

import (
	"encoding/json"
	"strings"
	"time"
)

// indexName renders an index pattern for a document:
//   - %{+FORMAT} is the document's @timestamp (UTC) in Joda-style FORMAT, as Logstash's
//     sprintf does: yyyy/YYYY year, yy/YY two-digit year, MM month, dd day, HH hour;
//     other characters are copied;
//   - %{[@cf][org]}, %{[@cf][space]} and %{[@cf][app]} are the app's metadata (kept
//     literally when unknown, as Logstash does);
//   - a pattern without %{…} that contains YYYY.MM.dd (e.g. logstash-YYYY.MM.dd) has
//     that part replaced by the date.
//
// The result is lowercased and characters Elasticsearch forbids in index names become
// '_', as the pipeline lowercases its per-org/space index names.
func indexName(pattern string, t time.Time, cf cfMeta) string {
	t = t.UTC()
	var b strings.Builder
	if !strings.Contains(pattern, "%{") {
		if i := strings.Index(pattern, "YYYY.MM.dd"); i >= 0 {
			b.WriteString(pattern[:i])
			b.WriteString(joda("YYYY.MM.dd", t))
			b.WriteString(pattern[i+len("YYYY.MM.dd"):])
			return sanitizeIndex(b.String())
		}
		return sanitizeIndex(pattern)
	}
	for rest := pattern; rest != ""; {
		i := strings.Index(rest, "%{")
		j := -1
		if i >= 0 {
			j = strings.IndexByte(rest[i:], '}')
		}
		if i < 0 || j < 0 {
			b.WriteString(rest)
			break
		}
		b.WriteString(rest[:i])
		ref := rest[i+2 : i+j]
		switch {
		case strings.HasPrefix(ref, "+"):
			b.WriteString(joda(ref[1:], t))
		case ref == "[@cf][org]" && cf.Org != "":
			b.WriteString(cf.Org)
		case ref == "[@cf][space]" && cf.Space != "":
			b.WriteString(cf.Space)
		case ref == "[@cf][app]" && cf.App != "":
			b.WriteString(cf.App)
		default:
			b.WriteString(rest[i : i+j+1])
		}
		rest = rest[i+j+1:]
	}
	return sanitizeIndex(b.String())
}

func joda(format string, t time.Time) string {
	r := strings.NewReplacer("yyyy", "2006", "YYYY", "2006", "yy", "06", "YY", "06", "MM", "01", "dd", "02", "HH", "15")
	return t.Format(r.Replace(format))
}

func sanitizeIndex(s string) string {
	return strings.Map(func(c rune) rune {
		switch c {
		case '\\', '/', '*', '?', '"', '<', '>', '|', ' ', ',', '#', ':':
			return '_'
		}
		return c
	}, strings.ToLower(s))
}

// templatePattern is the index pattern an index template needs to cover every name
// pattern renders: its literal prefix and a '*'. Empty when the prefix is empty (a
// template for "*" would reach every index).
func templatePattern(pattern string) string {
	prefix := pattern
	if i := strings.Index(prefix, "%{"); i >= 0 {
		prefix = prefix[:i]
	} else if i := strings.Index(prefix, "YYYY.MM.dd"); i >= 0 {
		prefix = prefix[:i]
	} else {
		return sanitizeIndex(pattern)
	}
	if prefix == "" {
		return ""
	}
	return sanitizeIndex(prefix) + "*"
}

// templatePriority sits above Elasticsearch's built-in logs-*-* data-stream template
// (priority 100), so logs-app-* indices are plain daily indices as Logstash makes them.
const templatePriority = 210

// indexTemplate is the mapping logsearch-for-cloudfoundry installs for app indices
// (elasticsearch-config-lfc templates index-mappings.json.erb and
// index-mappings-app.json.erb): strings are keywords, @message is full text with a raw
// keyword, counters and ports are longs. Unlike there, *_ms and *_sec are doubles, not
// longs: the pipeline sends fractional milliseconds, and a benchmark needs them when it
// aggregates in Elasticsearch (the sources keep the fractions either way).
func indexTemplate(pattern string) []byte {
	kw := map[string]any{"type": "keyword"}
	long := map[string]any{"type": "long"}
	dbl := map[string]any{"type": "double"}
	obj := func(props map[string]any) map[string]any {
		return map[string]any{"type": "object", "dynamic": true, "properties": props}
	}
	hostPort := obj(map[string]any{"host": kw, "port": long})
	body := map[string]any{
		"index_patterns": []string{pattern},
		"priority":       templatePriority,
		"_meta":          map[string]any{"description": "cf-benchmark: router logs shaped as logsearch-for-cloudfoundry indexes them"},
		"template": map[string]any{
			"mappings": map[string]any{
				"dynamic_templates": []any{
					map[string]any{"strings_as_keywords": map[string]any{
						"match_mapping_type": "string",
						"mapping":            map[string]any{"type": "keyword", "ignore_above": 8191},
					}},
				},
				"properties": map[string]any{
					"@timestamp":  map[string]any{"type": "date"},
					"@type":       kw,
					"@index_type": kw,
					"@input":      kw,
					"@level":      kw,
					"tags":        kw,
					"@message": map[string]any{"type": "text", "norms": false,
						"fields": map[string]any{"raw": map[string]any{"type": "keyword", "ignore_above": 256}}},
					"@source": obj(map[string]any{"type": kw, "component": kw}),
					"@cf": obj(map[string]any{"app": kw, "app_id": kw, "app_instance": long,
						"org": kw, "org_id": kw, "space": kw, "space_id": kw}),
					"rtr": obj(map[string]any{
						"hostname": kw, "timestamp": kw, "verb": kw, "path": kw, "http_spec": kw,
						"status": long, "request_bytes_received": long, "body_bytes_sent": long,
						"referer": kw, "http_user_agent": kw, "remote_addr": kw,
						"x_forwarded_for": kw, "x_forwarded_proto": kw, "vcap_request_id": kw,
						"response_time_sec": dbl, "response_time_ms": dbl,
						"gorouter_time_sec": dbl, "gorouter_time_ms": dbl,
						"src": hostPort, "dst": hostPort,
						"app":   obj(map[string]any{"id": kw, "index": long}),
						"extra": obj(map[string]any{}),
					}),
				},
			},
		},
	}
	b, _ := json.Marshal(body) // maps of strings and numbers always marshal
	return b
}
