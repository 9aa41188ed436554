package resultsdb

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// On a Citus cluster (a database with the citus extension) the schema is laid out so that
// the per-request tables spread over the worker nodes and the report's queries run on
// them; on plain Postgres nothing of this file applies and the schema is the migrations'.
//
// The per-request tables (samples, router_requests, app_timings) are distributed by seq,
// the worker-local sequence number of a request, and co-located:
//   - writes spread over every shard from the first request of the first step: a hash
//     of consecutive numbers is even, while a worker id or a run id would put all of a
//     step-1 generator's (or a run's) rows on one shard, one hot node;
//   - a request's client, router and app rows share their seq, so the join on
//     (worker_id, seq) finds them on one node with no repartitioning;
//   - samples carry no run id or trace id (32 compact bytes a row), and need none: the
//     run is found through workers, a reference table on every node.
//
// Router rows and app timings are keyed by (run_id, trace_id) on plain Postgres; Citus
// wants the distribution column in every unique key, so there the key is (run_id,
// trace_id, seq), the same uniqueness, since the trace id encodes seq.
//
// The small tables (runs, steps, workers, the plan and the per-step figures) are
// reference tables, a copy on every node, so they join with the distributed ones where
// those are. container_metrics and db_connections (a row per instance or server and poll,
// with a bigserial key) stay on the coordinator as Citus local tables: they are read per
// run, never joined per request, and replicating them would multiply their writes.

// What the SQL of the store keeps to, so that it runs on both:
//   - an UPDATE stamps the time with statement_timestamp(), not clock_timestamp():
//     Citus refuses volatile functions in UPDATEs of its tables, and the statement's
//     start is the same instant for these one-statement writes;
//   - ON CONFLICT … DO UPDATE takes times from EXCLUDED (the column's default), since
//     Citus allows only immutable functions there;
//   - rows inserted by INSERT … SELECT are counted with RETURNING: through the
//     coordinator the command tag counts the rows read;
//   - joins of the per-request tables include seq = seq;
//   - a reference table is not updated from a subquery over a distributed one;
//   - percentiles count values (percentile.go, the citusSQL dialect).

// MinCitusVersion is the oldest Citus the layout needs: since 11.0 every node has the
// metadata (writes may go through any node) and every multi-shard write commits with
// two-phase commit, so a node that is away fails a batch as a whole.
const MinCitusVersion = "11.0"

// shardCount is the number of shards of each distributed table: enough for 16 workers
// with two shards each, few enough that a COPY batch opens a modest number of
// connections (one per shard it touches).
const shardCount = 32

// layout is the place of every table of the schema on a Citus cluster.
var layout = []struct {
	table string
	kind  placement
}{
	{"schema_migrations", reference},
	{"runs", reference},
	{"steps", reference},
	{"run_variants", reference},
	{"workers", reference},
	{"worker_steps", reference},
	{"run_events", reference},
	{"router_log_pulls", reference},
	{"app_timing_flushes", reference},
	{"step_metrics", reference},
	{"step_app_metrics", reference},
	{"step_series", reference},
	{"step_router_metrics", reference},
	{"container_metrics", coordinator},
	{"db_connections", coordinator},
	{"samples", distributed},
	{"router_requests", distributed},
	{"app_timings", distributed},
}

type placement int

const (
	reference   placement = iota // a copy on every node
	coordinator                  // a Citus local table: on the coordinator only
	distributed                  // hash-distributed by seq, co-located with samples
)

// ErrNotCoordinator is returned for a database of a Citus worker node where the
// coordinator's is needed (migrating the schema).
var ErrNotCoordinator = errors.New("a Citus worker node, not the coordinator")

// Topology is what kind of database the store writes to.
type Topology struct {
	// Citus is the citus extension's version, "" on plain Postgres.
	Citus string
	// Nodes are the cluster's nodes that hold shards of the per-request tables,
	// "host:port" (empty on plain Postgres).
	Nodes []string
}

// String says it in a few words, e.g. "a Citus 13.2-1 cluster: 2 nodes hold shards".
func (t Topology) String() string {
	if t.Citus == "" {
		return "one PostgreSQL server"
	}
	return fmt.Sprintf("a Citus %s cluster: %d nodes hold shards (%s)", t.Citus, len(t.Nodes), strings.Join(t.Nodes, ", "))
}

// citusVersion returns the citus extension's version in the database, "" without it.
func citusVersion(ctx context.Context, db queryer) (string, error) {
	var v string
	err := db.QueryRow(ctx, `SELECT extversion FROM pg_extension WHERE extname = 'citus'`).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("look for the citus extension: %w", err)
	}
	return v, nil
}

// checkCitus refuses a Citus older than MinCitusVersion and reports whether db is the
// coordinator's database.
func checkCitus(ctx context.Context, db queryer, version string) (coordinator bool, err error) {
	if older(version, MinCitusVersion) {
		return false, fmt.Errorf("the database runs Citus %s; the results schema needs %s or newer: upgrade the extension (ALTER EXTENSION citus UPDATE) on every node", version, MinCitusVersion)
	}
	var group int
	if err := db.QueryRow(ctx, `SELECT groupid FROM pg_dist_local_group`).Scan(&group); err != nil {
		return false, fmt.Errorf("read the Citus node group: %w", err)
	}
	return group == 0, nil
}

// checkWorkerSchema accepts a worker node's database (Citus 11+ writes through any
// node) only when the coordinator has laid out the schema of this binary: DDL goes
// through the coordinator.
func checkWorkerSchema(ctx context.Context, db queryer, latest int) error {
	refuse := fmt.Errorf("the database is %w, and the results schema is not there yet: give the coordinator's URL, which lays it out over the cluster", ErrNotCoordinator)
	var laidOut bool
	if err := db.QueryRow(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&laidOut); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if !laidOut {
		return refuse
	}
	var current int
	if err := db.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	switch {
	case current > latest:
		return fmt.Errorf("results db schema is version %d, this binary knows up to %d: upgrade cf-benchmark", current, latest)
	case current < latest:
		return refuse
	}
	return nil
}

// older reports whether version a ("13.2-1") is older than b ("11.0"), comparing the
// numeric parts.
func older(a, b string) bool {
	pa, pb := versionParts(a), versionParts(b)
	for i := 0; i < len(pa) && i < len(pb); i++ {
		if pa[i] != pb[i] {
			return pa[i] < pb[i]
		}
	}
	return len(pa) < len(pb)
}

func versionParts(v string) []int {
	var out []int
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == '.' || r == '-' }) {
		n, err := strconv.Atoi(f)
		if err != nil {
			break
		}
		out = append(out, n)
	}
	return out
}

// distribute puts every table where layout says, skipping those already there. It
// runs after the migrations of a Citus coordinator's database; on a laid out schema it
// costs one query.
func distribute(ctx context.Context, conn *pgx.Conn) error {
	rows, err := conn.Query(ctx, `SELECT logicalrelid::text, partmethod, repmodel FROM pg_dist_partition`)
	if err != nil {
		return fmt.Errorf("read the Citus tables: %w", err)
	}
	now := map[string]placement{}
	for rows.Next() {
		var table, method, model string
		if err := rows.Scan(&table, &method, &model); err != nil {
			return fmt.Errorf("read the Citus tables: %w", err)
		}
		switch {
		case method == "h":
			now[table] = distributed
		case model == "t":
			now[table] = reference
		default:
			now[table] = coordinator
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the Citus tables: %w", err)
	}
	for _, t := range layout {
		if p, ok := now[t.table]; ok && p == t.kind {
			continue
		}
		var stmts []string
		switch t.kind {
		case reference:
			stmts = []string{fmt.Sprintf(`SELECT create_reference_table('%s')`, t.table)}
		case coordinator:
			if _, ok := now[t.table]; !ok { // a table with a foreign key to a reference table is one already
				stmts = []string{fmt.Sprintf(`SELECT citus_add_local_table_to_metadata('%s')`, t.table)}
			}
		case distributed:
			if t.table == "samples" {
				stmts = []string{fmt.Sprintf(`SELECT create_distributed_table('samples', 'seq', shard_count => %d)`, shardCount)}
				break
			}
			// Each subcommand alone: Citus refuses ADD CONSTRAINT beside others.
			stmts = []string{
				fmt.Sprintf(`ALTER TABLE %s ALTER COLUMN seq SET NOT NULL`, t.table),
				fmt.Sprintf(`ALTER TABLE %s DROP CONSTRAINT %[1]s_pkey`, t.table),
				fmt.Sprintf(`ALTER TABLE %s ADD PRIMARY KEY (run_id, trace_id, seq)`, t.table),
				fmt.Sprintf(`SELECT create_distributed_table('%s', 'seq', colocate_with => 'samples')`, t.table),
			}
		}
		// A table at a time, each in a transaction of its own.
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			for _, stmt := range stmts {
				if _, err := tx.Exec(ctx, stmt); err != nil {
					return fmt.Errorf("%s: %w", stmt, err)
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("lay the schema out on the Citus cluster: %w", err)
		}
	}
	return nil
}

// Topology says what kind of database the store writes to: one Postgres server, or a
// Citus cluster and its nodes that hold shards.
func (s *Store) Topology(ctx context.Context) (Topology, error) {
	if s.citus == "" {
		return Topology{}, nil
	}
	t := Topology{Citus: s.citus}
	rows, err := s.pool.Query(ctx, `SELECT n.nodename || ':' || n.nodeport FROM pg_dist_node n
WHERE n.noderole = 'primary' AND EXISTS (SELECT 1 FROM pg_dist_shard s JOIN pg_dist_placement p USING (shardid)
    WHERE s.logicalrelid = 'samples'::regclass AND p.groupid = n.groupid)
ORDER BY n.groupid`)
	if err != nil {
		return Topology{}, fmt.Errorf("list the Citus nodes: %w", err)
	}
	if t.Nodes, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		return Topology{}, fmt.Errorf("list the Citus nodes: %w", err)
	}
	return t, nil
}

// ErrNodeAway is returned by CheckNodes for a Citus node that does not answer.
var ErrNodeAway = errors.New("a Citus node does not answer")

// CheckNodes asks every worker node of a Citus cluster for an answer, so that a run
// does not start with a node missing, and so that it can say which node the writers
// wait for; on plain Postgres it does nothing. The error names every node that did
// not answer (ErrNodeAway); a node that says nothing holds it up to ctx's end.
func (s *Store) CheckNodes(ctx context.Context) error {
	if s.citus == "" {
		return nil
	}
	rows, err := s.pool.Query(ctx, `SELECT nodename || ':' || nodeport, success, result FROM run_command_on_workers('SELECT 1') ORDER BY 1`)
	if err != nil {
		return fmt.Errorf("ask the Citus nodes: %w", err)
	}
	type answer struct {
		node, result string
		ok           bool
	}
	answers, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (answer, error) {
		var a answer
		return a, r.Scan(&a.node, &a.ok, &a.result)
	})
	if err != nil {
		return fmt.Errorf("ask the Citus nodes: %w", err)
	}
	var away []string
	for _, a := range answers {
		if !a.ok {
			away = append(away, fmt.Sprintf("%s (%s)", a.node, a.result))
		}
	}
	if len(away) > 0 {
		return fmt.Errorf("%w: %s: start it, or remove it from the cluster (citus_remove_node) if it is gone for good", ErrNodeAway, strings.Join(away, "; "))
	}
	return nil
}

// Settle finishes the two-phase commits that a node's absence left prepared on it. A
// batch whose commit reached the coordinator but not a worker that went away is
// committed there only by recovery, which Citus runs every citus.recover_2pc_interval
// (60 s); until then its rows on that worker are invisible, so the figures of a step
// computed at once would miss rows a writer was told are stored, and the locks the
// prepared transaction holds there make every write to those rows (a run's or a
// worker's heartbeat, a step's end) wait. On plain Postgres it does nothing; with a
// node still away it fails as any write would.
func (s *Store) Settle(ctx context.Context) error {
	if s.citus == "" {
		return nil
	}
	if _, err := s.pool.Exec(ctx, `SELECT recover_prepared_transactions()`); err != nil {
		return fmt.Errorf("finish the two-phase commits of the Citus nodes: %w", err)
	}
	return nil
}

// awayCheckTimeout bounds Retryable's look at the nodes.
const awayCheckTimeout = 2 * time.Second

// Retryable reports whether the call that failed with err can succeed later: err is
// Transient, or, on a Citus cluster, a statement failed on a connection to one of its
// nodes, or while one of them does not answer. Citus reports a connection to a node
// that failed during a write to a reference table as an internal error ("failure on
// connection marked as essential: host:port", SQLSTATE XX000, the code it also gives
// a duplicate key): that one is known by its message, since a node on its way back
// answers the store's look a moment later and the statement, tried again, succeeds.
// For any other error the store asks the nodes, and a cluster it cannot ask counts as
// one with a node away. Callers that retry what the database refused for now use it
// instead of Transient.
func (s *Store) Retryable(ctx context.Context, err error) bool {
	if Transient(err) {
		return true
	}
	var pgErr *pgconn.PgError
	if s.citus == "" || !errors.As(err, &pgErr) {
		return false
	}
	if pgErr.Code == "XX000" && strings.HasPrefix(pgErr.Message, "failure on connection marked as essential") {
		return true
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), awayCheckTimeout)
	defer cancel()
	return s.CheckNodes(cctx) != nil
}
