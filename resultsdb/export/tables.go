package export

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// kind is how a column is written, and how a key column's value is read back to resume.
type kind int

const (
	kindInt     kind = iota // integer, written as is (negative numbers stay numbers)
	kindFloat               // double precision
	kindBool                // true/false, which pandas reads as booleans
	kindTime                // timestamptz, ISO 8601 in UTC: 2026-11-22 13:05:01.123456+00
	kindText                // free text (names, reasons): neutralised for spreadsheets
	kindToken               // generated text of a fixed alphabet (ids, hex, enums): written as is
	kindUUIDHex             // a uuid column written as 32 hex digits
)

// column is one output column: its header name and the SQL giving its value.
type column struct {
	name string
	expr string
	kind kind
}

// tableDef says how one table is exported.
type tableDef struct {
	cols []column
	// from is the FROM clause and the WHERE condition selecting the run's rows; %[1]s is
	// the run id literal.
	from string
	// key is the ORDER BY: SQL expressions unique within the run, each of them the value
	// of the output column at the same position of keyCols (which is how a resumed
	// stream finds where it stopped). They are qualified: a bare name in ORDER BY would
	// mean the output column, which may be neutralised or reformatted.
	key     []string
	keyCols []string
}

func col(name string, kind kind) column { return column{name: name, expr: name, kind: kind} }

// tableDefs: units are in the column names (_us, _bytes, _s); COLUMNS.md documents them.
var tableDefs = map[string]*tableDef{
	"runs": {
		cols: []column{col("id", kindToken), col("name", kindText), col("spec_file", kindText), col("status", kindToken),
			col("reason", kindText), col("epoch", kindTime), col("started_at", kindTime), col("ended_at", kindTime),
			{"trace_tag", "lpad(to_hex(trace_tag), 8, '0')", kindToken},
			{"router_log_source", "(SELECT coalesce(string_agg(p.source, ' ' ORDER BY p.source), '') FROM router_log_pulls p WHERE p.run_id = r.id)", kindText},
			col("spec", kindText)},
		from: `FROM runs r WHERE r.id = %[1]s`,
		key:  []string{"r.id"}, keyCols: []string{"id"},
	},
	"steps": {
		cols: []column{col("variant", kindText), {"step", "idx + 1", kindInt}, col("instances", kindInt), col("users", kindInt),
			col("started_at", kindTime), col("warmup_until", kindTime), col("ends_at", kindTime), col("ended_at", kindTime),
			col("stop_reason", kindText), col("instances_seen", kindInt), col("rate", kindFloat), col("app_instances", kindInt)},
		from: `FROM steps st WHERE st.run_id = %[1]s`,
		key:  []string{"st.variant", "st.idx + 1"}, keyCols: []string{"variant", "step"},
	},
	"run_events": {
		cols: []column{col("id", kindInt), col("at", kindTime), col("variant", kindText), {"step", "step + 1", kindInt},
			col("kind", kindToken), col("level", kindToken), col("check_name", kindToken), col("message", kindText),
			{"evidence", "evidence::text", kindText}},
		from: `FROM run_events ev WHERE ev.run_id = %[1]s`,
		key:  []string{"ev.id"}, keyCols: []string{"id"},
	},
	"variants": {
		cols: []column{col("variant", kindText), col("app_name", kindText), col("app_guid", kindText), col("generator_app", kindText),
			col("target_url", kindText), {"workload", "workload::text", kindText}, {"listed", "coalesce(nullif(listed, ''), variant)", kindText},
			{"matrix", "matrix::text", kindText}, col("app_memory_mb", kindInt), col("app_instances", kindInt),
			{"app_env", "app_env::text", kindText}, col("app_manifest", kindText), {"config", "coalesce(nullif(config, ''), variant)", kindText},
			col("repeat", kindInt)},
		from: `FROM run_variants rv WHERE rv.run_id = %[1]s`,
		key:  []string{"rv.variant"}, keyCols: []string{"variant"},
	},
	"requests": {
		cols: []column{{"variant", "rv.variant", kindText}, {"request", "q.n - 1", kindInt}, {"name", "(q.r->>'name')", kindText},
			{"method", "(q.r->>'method')", kindToken}, {"path", "(q.r->>'path')", kindText}, {"weight", "(q.r->>'weight')::int", kindInt}},
		from: `FROM run_variants rv, jsonb_array_elements(rv.workload->'requests') WITH ORDINALITY AS q(r, n) WHERE rv.run_id = %[1]s`,
		key:  []string{"rv.variant", "q.n - 1"}, keyCols: []string{"variant", "request"},
	},
	"step_metrics": {
		cols: []column{col("variant", kindText), {"step", "m.step + 1", kindInt}, col("seconds", kindFloat), col("count", kindInt),
			col("errors", kindInt), {"errors_by_class", "errors_by_class::text", kindText}, col("bytes", kindInt), col("throughput", kindFloat),
			col("mean_us", kindFloat), col("p50_us", kindInt), col("p90_us", kindInt), col("p99_us", kindInt), col("p999_us", kindInt),
			col("min_us", kindInt), col("max_us", kindInt), col("instances", kindInt), col("instances_seen", kindInt), col("users", kindInt),
			col("offered_rate", kindFloat), col("missed", kindInt), col("send_lag_mean_us", kindFloat), col("send_lag_p99_us", kindInt),
			col("stalled_ms", kindInt), col("omitted", kindInt), col("app_timed", kindInt), col("app_total_us", kindFloat),
			col("app_pool_wait_us", kindFloat), col("app_query_us", kindFloat), col("db_connections", kindInt),
			col("db_max_connections", kindInt), col("computed_at", kindTime)},
		from: `FROM step_metrics m WHERE m.run_id = %[1]s`,
		key:  []string{"m.variant", "m.step + 1"}, keyCols: []string{"variant", "step"},
	},
	"step_app_metrics": {
		cols: []column{col("variant", kindText), {"step", "am.step + 1", kindInt}, col("app_name", kindText), col("role", kindToken),
			col("instances", kindInt), col("cpu_source", kindToken), col("cpu_points", kindInt), col("cpu_covered", kindFloat),
			col("cpu_mean_cores", kindFloat), col("cpu_max_cores", kindFloat), col("cpu_total_cores", kindFloat),
			col("mem_mean_bytes", kindFloat), col("mem_max_bytes", kindInt), col("mem_quota_bytes", kindInt), col("cells", kindInt),
			col("cpu_available_cores", kindFloat), col("cpu_wait_cores", kindFloat), col("cpu_wait_share", kindFloat)},
		from: `FROM step_app_metrics am WHERE am.run_id = %[1]s`,
		key:  []string{"am.variant", "am.step + 1", "am.app_name"}, keyCols: []string{"variant", "step", "app_name"},
	},
	// The per-second series of each step as ComputeStepSeries stored it, one row per
	// step (a step without samples has empty arrays), the arrays as JSON; p50_us is
	// empty (NULL) for a row stored before schema v16.
	"step_series": {
		cols: []column{col("variant", kindText), {"step", "ss.step + 1", kindInt}, {"second", "array_to_json(ss.second)::text", kindToken},
			{"count", "array_to_json(ss.count)::text", kindToken}, {"errors", "array_to_json(ss.errors)::text", kindToken},
			{"p50_us", "array_to_json(ss.p50_us)::text", kindToken}, {"p99_us", "array_to_json(ss.p99_us)::text", kindToken},
			{"intended_mean_us", "array_to_json(ss.intended_mean_us)::text", kindToken}, col("computed_at", kindTime)},
		from: `FROM step_series ss WHERE ss.run_id = %[1]s`,
		key:  []string{"ss.variant", "ss.step + 1"}, keyCols: []string{"variant", "step"},
	},
	"step_router_metrics": {
		cols: []column{col("variant", kindText), {"step", "rm.step + 1", kindInt}, col("sent", kindInt), col("found", kindInt),
			col("no_response", kindInt), col("seconds", kindInt), col("empty_seconds", kindInt), col("partial_seconds", kindInt),
			col("missing_in_empty", kindInt), col("decomposed", kindInt), col("client_us_sum", kindFloat),
			col("generator_network_us_sum", kindFloat), col("router_us_sum", kindFloat), col("router_app_us_sum", kindFloat),
			col("app_code_us_sum", kindFloat), col("pool_wait_us_sum", kindFloat), col("query_us_sum", kindFloat), col("computed_at", kindTime)},
		from: `FROM step_router_metrics rm WHERE rm.run_id = %[1]s`,
		key:  []string{"rm.variant", "rm.step + 1"}, keyCols: []string{"variant", "step"},
	},
	"router_log_pulls": {
		cols: []column{col("source", kindText), col("retrieved", kindInt), col("stored", kindInt), col("unparseable", kindInt),
			col("foreign_docs", kindInt), col("budget_exhausted", kindBool), col("started_at", kindTime), col("updated_at", kindTime),
			col("finished_at", kindTime)},
		from: `FROM router_log_pulls pl WHERE pl.run_id = %[1]s`,
		key:  []string{"pl.source"}, keyCols: []string{"source"},
	},
	"db_connections": {
		cols: []column{col("id", kindInt), col("at", kindTime), col("service", kindText), col("in_use", kindInt), col("to_database", kindInt),
			col("max_connections", kindInt)},
		from: `FROM db_connections dc WHERE dc.run_id = %[1]s`,
		key:  []string{"dc.id"}, keyCols: []string{"id"},
	},
	"workers": {
		cols: []column{{"worker_id", "id", kindInt}, col("variant", kindText), col("app_name", kindText), col("instance_index", kindInt),
			col("instance_guid", kindText), col("host", kindText), col("started_at", kindTime), col("heartbeat_at", kindTime),
			col("stopped_at", kindTime), col("sent", kindInt), col("stored", kindInt), col("spilled", kindInt), col("missed", kindInt),
			col("dropped", kindInt)},
		from: `FROM workers w WHERE w.run_id = %[1]s`,
		key:  []string{"w.id"}, keyCols: []string{"worker_id"},
	},
	"worker_steps": {
		cols: []column{{"worker_id", "ws.worker_id", kindInt}, {"variant", "w.variant", kindText}, {"step", "ws.step + 1", kindInt},
			{"joined_at", "ws.joined_at", kindTime}, {"skew_us", "ws.skew_us", kindInt}, {"late_join", "ws.late_join", kindBool},
			{"sent", "ws.sent", kindInt}, {"missed", "ws.missed", kindInt}, {"done_at", "ws.done_at", kindTime}},
		from: `FROM worker_steps ws JOIN workers w ON w.id = ws.worker_id WHERE w.run_id = %[1]s`,
		key:  []string{"ws.worker_id", "ws.step + 1"}, keyCols: []string{"worker_id", "step"},
	},
	"samples": {
		cols: []column{{"variant", "w.variant", kindText}, {"worker_id", "s.worker_id", kindInt}, {"seq", "s.seq", kindInt},
			{"trace_id", sampleTraceID, kindToken},
			{"step", "s.step + 1", kindInt}, {"request", "s.request", kindInt}, {"intended_us", "s.intended_us", kindInt},
			{"start_delay_us", "s.start_delay_us", kindInt}, {"latency_us", "s.latency_us", kindInt}, {"status", "s.status", kindInt},
			{"bytes", "s.bytes", kindInt},
			{"error", `(ARRAY['', 'other', 'timeout', 'refused', 'reset', 'tls', 'dns', 'canceled'])[s.error + 1]`, kindToken},
			{"warmup", "s.warmup", kindBool}},
		from: `FROM samples s JOIN workers w ON w.id = s.worker_id JOIN runs r ON r.id = w.run_id WHERE w.run_id = %[1]s`,
		key:  []string{"s.worker_id", "s.seq"}, keyCols: []string{"worker_id", "seq"},
	},
	"container_metrics": {
		cols: []column{col("id", kindInt), col("at", kindTime), col("app_name", kindText), col("app_guid", kindText),
			col("process_type", kindText), col("instance_index", kindInt), col("state", kindText), col("cpu", kindFloat),
			col("cpu_entitlement", kindFloat), col("mem_bytes", kindInt), col("mem_quota_bytes", kindInt), col("disk_bytes", kindInt),
			col("host", kindText), col("isolation_segment", kindText), col("uptime_s", kindInt), col("cpu_time_ns", kindInt),
			col("entitlement_ns", kindInt), col("container_age_ns", kindInt), col("cpu_wait_ns", kindInt), col("source", kindToken)},
		from: `FROM container_metrics cm WHERE cm.run_id = %[1]s`,
		key:  []string{"cm.id"}, keyCols: []string{"id"},
	},
	"router_requests": {
		cols: []column{{"trace_id", "trace_id", kindUUIDHex}, col("at", kindTime), col("app_guid", kindText), col("app_index", kindInt),
			col("status", kindInt), col("response_time_us", kindInt), col("gorouter_time_us", kindInt),
			col("worker_id", kindInt), col("seq", kindInt), col("app_name", kindText), col("router_error", kindText)},
		from: `FROM router_requests rr WHERE rr.run_id = %[1]s`,
		key:  []string{"rr.trace_id"}, keyCols: []string{"trace_id"},
	},
	"app_timings": {
		cols: []column{{"trace_id", "trace_id", kindUUIDHex}, col("app_name", kindText), col("instance_index", kindInt), col("at", kindTime),
			col("pool_wait_us", kindInt), col("query_us", kindInt), col("total_us", kindInt), col("worker_id", kindInt), col("seq", kindInt)},
		from: `FROM app_timings t WHERE t.run_id = %[1]s`,
		key:  []string{"t.trace_id"}, keyCols: []string{"trace_id"},
	},
	"app_timing_flushes": {
		cols: []column{col("id", kindInt), col("at", kindTime), col("variant", kindText), {"step", "step + 1", kindInt}, col("app_name", kindText),
			col("instance_index", kindInt), col("rows_received", kindInt), col("stored", kindInt), col("foreign_rows", kindInt),
			col("dropped", kindInt), col("error", kindText)},
		from: `FROM app_timing_flushes af WHERE af.run_id = %[1]s`,
		key:  []string{"af.id"}, keyCols: []string{"id"},
	},
	// One line per request with the three views of it side by side: the generator's,
	// the router's access log and the app's own timings, joined on the sample's key
	// (both others store it decoded from the trace id).
	"request_times": {
		cols: []column{{"variant", "w.variant", kindText}, {"step", "s.step + 1", kindInt}, {"worker_id", "s.worker_id", kindInt},
			{"seq", "s.seq", kindInt}, {"trace_id", sampleTraceID, kindToken}, {"warmup", "s.warmup", kindBool},
			{"status", "s.status", kindInt}, {"client_us", "s.latency_us", kindInt},
			{"router_us", "rr.response_time_us", kindInt}, {"gorouter_us", "rr.gorouter_time_us", kindInt},
			{"app_us", "t.total_us", kindInt}, {"pool_wait_us", "t.pool_wait_us", kindInt}, {"query_us", "t.query_us", kindInt},
			{"app_instance", "coalesce(t.instance_index, rr.app_index)", kindInt}},
		from: `FROM samples s JOIN workers w ON w.id = s.worker_id JOIN runs r ON r.id = w.run_id
LEFT JOIN router_requests rr ON rr.run_id = w.run_id AND rr.worker_id = s.worker_id AND rr.seq = s.seq
LEFT JOIN app_timings t ON t.run_id = w.run_id AND t.worker_id = s.worker_id AND t.seq = s.seq
WHERE w.run_id = %[1]s`,
		key: []string{"s.worker_id", "s.seq"}, keyCols: []string{"worker_id", "seq"},
	},
}

// sampleTraceID is the SQL of a sample's trace id (package sample's layout: run tag,
// worker id split around the UUID version digit, seq) as 32 hex digits.
const sampleTraceID = `lpad(to_hex(r.trace_tag), 8, '0') || lpad(to_hex(s.worker_id >> 12), 4, '0') || '4' || ` +
	`lpad(to_hex(s.worker_id & 4095), 3, '0') || lpad(to_hex(s.seq), 16, '0')`

// selectExpr is the SQL writing column c.
func (c column) selectExpr() string {
	switch c.kind {
	case kindText:
		// A cell that starts with = + - @ tab or CR is a formula to a spreadsheet: a
		// leading ' makes it text. Values that start with ' get one too, so the prefix
		// can always be taken off again (resuming reads keys back from the file).
		return fmt.Sprintf(`CASE WHEN left(%[1]s, 1) IN ('=', '+', '-', '@', E'\t', E'\r', '''') THEN '''' || %[1]s ELSE %[1]s END AS %[2]s`, c.expr, c.name)
	case kindBool:
		return c.expr + "::text AS " + c.name // true/false rather than t/f
	case kindUUIDHex:
		return "replace(" + c.expr + "::text, '-', '') AS " + c.name
	}
	if c.expr == c.name {
		return c.name
	}
	return c.expr + " AS " + c.name
}

// selectSQL is the query for the run's rows after the key values after (all rows when
// nil), in key order. The run id is a literal: COPY takes no parameters, and callers
// checked it against its strict pattern.
func (d *tableDef) selectSQL(runID string, after []string) string {
	var b strings.Builder
	b.WriteString("SELECT ")
	for i, c := range d.cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c.selectExpr())
	}
	b.WriteString(" ")
	fmt.Fprintf(&b, d.from, quoteLiteral(runID))
	if after != nil {
		fmt.Fprintf(&b, " AND (%s) > (%s)", strings.Join(d.key, ", "), strings.Join(after, ", "))
	}
	b.WriteString(" ORDER BY " + strings.Join(d.key, ", "))
	return b.String()
}

func (d *tableDef) copySQL(runID string, header bool, after []string) string {
	opts := "FORMAT csv"
	if header {
		opts += ", HEADER"
	}
	return "COPY (" + d.selectSQL(runID, after) + ") TO STDOUT (" + opts + ")"
}

// keyLiterals reads the key values of a record written by this table's COPY and returns
// them as SQL literals.
func (d *tableDef) keyLiterals(record []byte) ([]string, error) {
	fields, err := parseRecord(record)
	if err != nil {
		return nil, err
	}
	if len(fields) != len(d.cols) {
		return nil, fmt.Errorf("record has %d fields, want %d", len(fields), len(d.cols))
	}
	lits := make([]string, len(d.keyCols))
	for i, name := range d.keyCols {
		j := d.colIndex(name)
		v, c := fields[j], d.cols[j]
		switch c.kind {
		case kindInt:
			if _, err := strconv.ParseInt(v, 10, 64); err != nil {
				return nil, fmt.Errorf("key %s: %q is not an integer", name, v)
			}
			lits[i] = v
		case kindText:
			lits[i] = quoteLiteral(strings.TrimPrefix(v, "'"))
		case kindToken:
			lits[i] = quoteLiteral(v)
		case kindUUIDHex:
			if len(v) != 32 || strings.Trim(v, "0123456789abcdef") != "" {
				return nil, fmt.Errorf("key %s: %q is not 32 hex digits", name, v)
			}
			lits[i] = "'" + v + "'::uuid"
		default:
			return nil, fmt.Errorf("key %s: no literal for its kind", name)
		}
	}
	return lits, nil
}

func (d *tableDef) colIndex(name string) int {
	for i, c := range d.cols {
		if c.name == name {
			return i
		}
	}
	panic("export: no column " + name) // the definitions above are wrong; a test checks them
}

// quoteLiteral quotes s as an SQL string literal (standard_conforming_strings is on).
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// parseRecord splits one CSV record as PostgreSQL writes it (fields quoted with ", a
// quote inside doubled, one trailing newline) into its fields. Unlike encoding/csv it
// keeps a CR inside a quoted field.
func parseRecord(rec []byte) ([]string, error) {
	if len(rec) == 0 || rec[len(rec)-1] != '\n' {
		return nil, errors.New("record does not end with a newline")
	}
	rec = rec[:len(rec)-1]
	var fields []string
	var f []byte
	for i := 0; ; {
		f = f[:0]
		if i < len(rec) && rec[i] == '"' {
			i++
			for {
				if i >= len(rec) {
					return nil, errors.New("unterminated quoted field")
				}
				if rec[i] == '"' {
					if i+1 < len(rec) && rec[i+1] == '"' {
						f = append(f, '"')
						i += 2
						continue
					}
					i++
					break
				}
				f = append(f, rec[i])
				i++
			}
			if i < len(rec) && rec[i] != ',' {
				return nil, errors.New("text after a quoted field")
			}
		} else {
			for i < len(rec) && rec[i] != ',' {
				if rec[i] == '"' || rec[i] == '\n' {
					return nil, errors.New("quote or newline in an unquoted field")
				}
				f = append(f, rec[i])
				i++
			}
		}
		fields = append(fields, string(f))
		if i >= len(rec) {
			return fields, nil
		}
		i++ // the comma
	}
}

// permanentConnectError reports whether the server refused a connection for a reason
// another attempt will not change (authentication, a missing database). Network errors,
// and the server starting up or out of connections, are worth another attempt.
func permanentConnectError(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch pgErr.Code[:2] {
	case "53", "57", "08": // insufficient resources, operator intervention, connection exception
		return false
	}
	return true
}

// TextColumn reports whether column of table's CSV file is free text, which the export
// neutralises for spreadsheets: a value written with a leading ' is the value without
// it. Readers of the files take that one ' off again.
func TextColumn(table, column string) bool {
	d, ok := tableDefs[table]
	if !ok {
		return false
	}
	for _, c := range d.cols {
		if c.name == column {
			return c.kind == kindText
		}
	}
	return false
}
