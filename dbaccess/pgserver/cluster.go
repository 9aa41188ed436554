package pgserver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle"
)

// Cluster is a Citus cluster on 127.0.0.1: a coordinator and workers, each a Server
// (with Options.Citus) in a state directory of its own under the cluster's
// (Dir/coordinator, Dir/worker-0, Dir/worker-1 …), all with the one superuser password
// of Dir/password. A Fast cluster's nodes are copies of the template cluster.
//
// It follows the lifecycle of package lifecycle. It runs while its nodes run, bar a
// worker stopped by StopWorker; a node that exits on its own stops the cluster, a
// failure Wait reports. Close and the end of Start's context stop the nodes this
// process started; nodes already running on their state directories are reused, as
// Server reuses them. A node keeps its port across restarts, since the Citus metadata
// of every database names it.
//
// Citus keeps its node list per database, and does not propagate CREATE DATABASE:
// CreateDatabase makes a database on every node and registers the nodes in it.
type Cluster struct {
	opts    Options
	workers int
	life    lifecycle.State

	mu       sync.Mutex
	nodes    []*node // the coordinator, then the workers; nil until started
	nodeCtx  context.Context
	password string
	stopping bool
	failures []error
	failed   chan struct{}  // closed at the first failure
	starting sync.WaitGroup // StartWorker calls in flight
	watchers sync.WaitGroup // one per node server started
}

var _ lifecycle.Part = (*Cluster)(nil)

// node is one server of the cluster and its state.
type node struct {
	name, dir string
	srv       *Server
	down      bool // stopped by StopWorker
	busy      bool // in StopWorker or StartWorker
	cancel    context.CancelFunc
}

// NewCluster returns the cluster of opts.Dir with a coordinator and workers workers,
// not started. opts apply to every node, except Port, which is the coordinator's
// (workers take free ports); Citus is implied.
func NewCluster(opts Options, workers int) *Cluster {
	opts.Citus = true
	return &Cluster{opts: opts, workers: workers, failed: make(chan struct{})}
}

// nodeName is the name of node i of a cluster, and of its state directory: 0 is the
// coordinator, then the workers from worker-0.
func nodeName(i int) string {
	if i == 0 {
		return "coordinator"
	}
	return "worker-" + strconv.Itoa(i-1)
}

// ClusterLayout reports whether dir is the state directory of a cluster and returns
// its nodes' state directories (for Attach): a coordinator and the workers it has.
func ClusterLayout(dir string) (coordinator string, workers []string, ok bool) {
	isDir := func(p string) bool {
		fi, err := os.Stat(p)
		return err == nil && fi.IsDir()
	}
	coordinator = filepath.Join(dir, nodeName(0))
	if !isDir(coordinator) {
		return "", nil, false
	}
	for i := 1; isDir(filepath.Join(dir, nodeName(i))); i++ {
		workers = append(workers, filepath.Join(dir, nodeName(i)))
	}
	return coordinator, workers, true
}

// Start starts (or attaches to) every node, the coordinator first, and returns once
// all accept connections, or with why one could not start (ErrNoCitus when Citus is
// not installed). ctx bounds the cluster's life.
func (c *Cluster) Start(ctx context.Context) error {
	if err := c.life.Begin(); err != nil {
		return fmt.Errorf("pgserver cluster: %w", err)
	}
	nodeCtx, cancel := context.WithCancel(ctx)
	if err := c.start(nodeCtx); err != nil {
		cancel()
		c.life.Stopped(err)
		return err
	}
	go c.supervise(ctx, cancel)
	return nil
}

// Wait blocks until every node has stopped (or this process has let go of those it
// attached to): nil after Close or the end of Start's context, else why a node ended.
func (c *Cluster) Wait() error { return c.life.Wait() }

// Close stops the nodes this process started (fast shutdown) and waits for them.
func (c *Cluster) Close() error { return c.life.Close() }

// Run is Start followed by Wait.
func (c *Cluster) Run(ctx context.Context) error { return lifecycle.Run(ctx, c) }

func (c *Cluster) start(ctx context.Context) error {
	if c.opts.Dir == "" {
		return errors.New("pgserver: a state directory is required")
	}
	if c.workers < 1 {
		return errors.New("pgserver: a Citus cluster needs one worker at least")
	}
	dir, err := filepath.Abs(c.opts.Dir)
	if err != nil {
		return err
	}
	for _, f := range []string{"data", "port"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return fmt.Errorf("%s is the state directory of a single server, not of a Citus cluster", dir)
		}
	}
	if _, workers, ok := ClusterLayout(dir); ok && len(workers) != c.workers {
		return fmt.Errorf("%s holds a Citus cluster of %d workers, not %d", dir, len(workers), c.workers)
	}
	if err := supported(); err != nil {
		return err
	}
	binDir, err := FindBinDir()
	if err != nil {
		return err
	}
	if err := citusInstalled(binDir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create cluster state dir: %w", err)
	}
	pwFile := filepath.Join(dir, "password")
	pw, err := loadOrCreatePassword(pwFile)
	if err != nil {
		return err
	}
	nodes := make([]*node, 1+c.workers)
	for i := range nodes {
		n := &node{name: nodeName(i), dir: filepath.Join(dir, nodeName(i))}
		if err := os.MkdirAll(n.dir, 0o755); err != nil {
			return fmt.Errorf("create %s state dir: %w", n.name, err)
		}
		// The node's initdb takes the cluster's password; a Fast node's is the
		// template's, the same for every copy.
		if _, err := os.Stat(filepath.Join(n.dir, "password")); errors.Is(err, fs.ErrNotExist) {
			if err := os.WriteFile(filepath.Join(n.dir, "password"), []byte(pw+"\n"), 0o600); err != nil {
				return fmt.Errorf("write %s password: %w", n.name, err)
			}
		}
		nodes[i] = n
	}
	// The coordinator first: a Fast one makes the template the workers copy.
	errs := make([]error, len(nodes))
	errs[0] = c.startNode(ctx, nodes[0], c.opts.Port)
	if errs[0] == nil {
		var wg sync.WaitGroup
		for i, n := range nodes[1:] {
			wg.Go(func() { errs[1+i] = c.startNode(ctx, n, 0) })
		}
		wg.Wait()
	}
	closeAll := func() {
		for _, n := range nodes {
			if n.srv != nil {
				n.srv.Close()
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		closeAll()
		return err
	}
	c.password = nodes[0].srv.password
	for _, n := range nodes[1:] {
		if n.srv.password != c.password {
			closeAll()
			return fmt.Errorf("the nodes of %s have different superuser passwords (%s, %s): remove the directory and start again", dir, nodes[0].dir, n.dir)
		}
	}
	if c.password != pw {
		if err := os.WriteFile(pwFile, []byte(c.password+"\n"), 0o600); err != nil {
			closeAll()
			return fmt.Errorf("write cluster password: %w", err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nodes, c.nodeCtx = nodes, ctx
	for _, n := range nodes {
		c.watchers.Add(1)
		go c.watch(n, n.srv)
	}
	return nil
}

// nodeOptions are the options of node n: the cluster's, on port, else on the port n
// had last (0: a free one), which the Citus metadata names.
func (c *Cluster) nodeOptions(n *node, port int) Options {
	opts := c.opts
	opts.Dir = n.dir
	opts.Port = port
	if port == 0 {
		opts.Port = lastPort(filepath.Join(n.dir, "port"))
	}
	return opts
}

// startNode starts node n's server with the life ctx.
func (c *Cluster) startNode(ctx context.Context, n *node, port int) error {
	srv := New(c.nodeOptions(n, port))
	if err := srv.Start(ctx); err != nil {
		return fmt.Errorf("start %s: %w", n.name, err)
	}
	n.srv = srv
	return nil
}

// watch records why srv stopped, unless it was asked to (Close, the end of the
// cluster's context, StopWorker); the first failure stops the cluster.
func (c *Cluster) watch(n *node, srv *Server) {
	defer c.watchers.Done()
	err := srv.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil || (n.down && n.srv == srv) {
		return
	}
	c.failures = append(c.failures, fmt.Errorf("%s: %w", n.name, err))
	if len(c.failures) == 1 {
		close(c.failed)
	}
}

// supervise waits for Close, the end of ctx or a node's failure, and then stops every
// node (cancel ends their context) and waits for them.
func (c *Cluster) supervise(ctx context.Context, cancel context.CancelFunc) {
	select {
	case <-c.life.Stopping():
	case <-ctx.Done():
	case <-c.failed:
	}
	c.mu.Lock()
	c.stopping = true
	c.mu.Unlock()
	cancel()
	c.starting.Wait()
	c.watchers.Wait()
	c.mu.Lock()
	err := errors.Join(c.failures...)
	c.mu.Unlock()
	c.life.Stopped(err)
}

// server returns node i's server; nil before Start.
func (c *Cluster) server(i int) *Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i < 0 || i >= len(c.nodes) {
		return nil
	}
	return c.nodes[i].srv
}

// Coordinator is the coordinator's server; nil before Start.
func (c *Cluster) Coordinator() *Server { return c.server(0) }

// Worker is the server of worker i (from 0): after StopWorker the stopped one, which
// keeps its port; nil before Start or when there is no worker i.
func (c *Cluster) Worker(i int) *Server {
	if i < 0 {
		return nil
	}
	return c.server(1 + i)
}

// DSN is the URL of database db on the coordinator, which clients use; "" before Start.
func (c *Cluster) DSN(db string) string {
	if s := c.Coordinator(); s != nil {
		return s.DSN(db)
	}
	return ""
}

// WorkerDSNs are the URLs of database db on each worker, in order (to look at the
// shards a worker holds); nil before Start.
func (c *Cluster) WorkerDSNs(db string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.nodes) == 0 {
		return nil
	}
	var dsns []string
	for _, n := range c.nodes[1:] {
		dsns = append(dsns, n.srv.DSN(db))
	}
	return dsns
}

// CreateDatabase makes name a distributed database unless it is one already: it
// creates it on every node with the Citus extension and the credentials Citus' own
// connections between the nodes log in with (pg_dist_authinfo: the superuser and the
// cluster's password, for every node), and registers the coordinator and the workers
// in it. Then create_distributed_table there spreads shards over all workers. Every
// node must run. Names are as for Server.CreateDatabase.
func (c *Cluster) CreateDatabase(ctx context.Context, name string) error {
	if !dbName.MatchString(name) {
		return fmt.Errorf("database name %q: want a lowercase identifier", name)
	}
	c.mu.Lock()
	servers := make([]*Server, len(c.nodes))
	names := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		servers[i], names[i] = n.srv, n.name
	}
	c.mu.Unlock()
	if len(servers) == 0 {
		return errors.New("pgserver cluster: not started")
	}
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, srv := range servers {
		wg.Go(func() {
			if err := c.prepare(ctx, srv, name); err != nil {
				errs[i] = fmt.Errorf("%s: %w", names[i], err)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	conn, err := pgconn.Connect(ctx, servers[0].DSN(name))
	if err != nil {
		return fmt.Errorf("connect to the coordinator: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	port := func(s *Server) [][]byte { return [][]byte{[]byte(strconv.Itoa(s.Port()))} }
	if err := conn.ExecParams(ctx, `SELECT citus_set_coordinator_host('127.0.0.1', $1::int)`, port(servers[0]), nil, nil, nil).Read().Err; err != nil {
		return fmt.Errorf("register the coordinator in %s: %w", name, err)
	}
	for i, w := range servers[1:] {
		// citus_add_node returns the id of a node that is registered already.
		if err := conn.ExecParams(ctx, `SELECT citus_add_node('127.0.0.1', $1::int)`, port(w), nil, nil, nil).Read().Err; err != nil {
			return fmt.Errorf("register %s in %s: %w", names[1+i], name, err)
		}
	}
	return nil
}

// prepare makes database name on srv with the Citus extension and the cluster's
// credentials for connections between the nodes.
func (c *Cluster) prepare(ctx context.Context, srv *Server, name string) error {
	if err := srv.CreateDatabase(ctx, name); err != nil {
		return err
	}
	conn, err := pgconn.Connect(ctx, srv.DSN(name))
	if err != nil {
		return fmt.Errorf("connect to %s: %w", name, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := conn.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS citus`).Close(); err != nil {
		return fmt.Errorf("create extension citus in %s: %w", name, err)
	}
	// nodeid 0: to every node. authinfo is a libpq connection string.
	auth := strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(c.password)
	res := conn.ExecParams(ctx, `INSERT INTO pg_dist_authinfo (nodeid, rolename, authinfo)
		SELECT 0, $1, $2 WHERE NOT EXISTS (SELECT 1 FROM pg_dist_authinfo WHERE nodeid = 0 AND rolename = $1)`,
		[][]byte{[]byte(Superuser), []byte("password='" + auth + "'")}, nil, nil, nil).Read()
	if err := res.Err; err != nil {
		return fmt.Errorf("store the credentials of the nodes in %s: %w", name, err)
	}
	return nil
}

// worker returns worker i's node for StopWorker and StartWorker, marked busy; the
// caller holds c.mu.
func (c *Cluster) worker(i int) (*node, error) {
	switch {
	case c.nodes == nil:
		return nil, errors.New("pgserver cluster: not started")
	case c.stopping:
		return nil, fmt.Errorf("pgserver cluster: %w", lifecycle.ErrClosed)
	case i < 0 || i >= len(c.nodes)-1:
		return nil, fmt.Errorf("pgserver cluster: no worker %d (%d workers)", i, len(c.nodes)-1)
	}
	n := c.nodes[1+i]
	if n.busy {
		return nil, fmt.Errorf("pgserver cluster: %s is being stopped or started", n.name)
	}
	n.busy = true
	return n, nil
}

// StopWorker stops worker i (fast shutdown), whoever started it, and waits for it to
// exit; the cluster runs on without it (writes to its shards fail) until StartWorker.
// Stopping a stopped worker does nothing.
func (c *Cluster) StopWorker(i int) error {
	c.mu.Lock()
	n, err := c.worker(i)
	if err != nil {
		c.mu.Unlock()
		return err
	}
	srv, down := n.srv, n.down
	n.down = true
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		n.busy = false
		c.mu.Unlock()
	}()
	if down {
		return nil
	}
	err = srv.Close()
	if !srv.Owned() {
		err = errors.Join(err, srv.Kill())
	}
	if err != nil {
		return fmt.Errorf("stop %s: %w", n.name, err)
	}
	return nil
}

// StartWorker starts worker i again after StopWorker, on the port it had (the Citus
// metadata names it): it fails when another process took the port. ctx bounds the
// start; the worker then lives as long as the cluster.
func (c *Cluster) StartWorker(ctx context.Context, i int) error {
	c.mu.Lock()
	n, err := c.worker(i)
	if err == nil && !n.down {
		n.busy = false
		err = fmt.Errorf("pgserver cluster: %s is running", n.name)
	}
	if err != nil {
		c.mu.Unlock()
		return err
	}
	c.starting.Add(1)
	defer c.starting.Done()
	port, life := n.srv.Port(), c.nodeCtx
	c.mu.Unlock()

	life, cancel := context.WithCancel(life)
	stop := context.AfterFunc(ctx, cancel)
	srv := New(c.nodeOptions(n, port))
	err = srv.Start(life)
	if !stop() && err == nil { // ctx ended during the start: the server stops
		srv.Wait()
		err = ctx.Err()
	}
	c.mu.Lock()
	n.busy = false
	if err == nil && c.stopping {
		err = fmt.Errorf("pgserver cluster: %w", lifecycle.ErrClosed)
	}
	if err == nil {
		old := n.cancel
		n.srv, n.down, n.cancel = srv, false, cancel
		c.watchers.Add(1)
		go c.watch(n, srv)
		c.mu.Unlock()
		if old != nil {
			old()
		}
		return nil
	}
	c.mu.Unlock()
	srv.Close() // stops it when it started after all
	cancel()
	return fmt.Errorf("start %s: %w", n.name, err)
}
