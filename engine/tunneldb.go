package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/resultsdb/tunnel"
)

// ErrTunnelConfig marks a tunnel or database address OpenThroughTunnel cannot use (a
// bad server URL, fingerprint or DSN); nothing was started.
var ErrTunnelConfig = errors.New("bad tunnel configuration")

// OpenThroughTunnel is the one way to reach a results database through the tunnel app:
// it starts a tunnel client to cc.Server on 127.0.0.1, forwarding to the database dsn
// names (as the tunnel app sees it: its host and port are the one remote the tunnel
// allows; cc.Remote is set from it), and opens the store through it. close closes the
// store, then the tunnel, which lives until then even when ctx ends. A server that
// refuses the tunnel gives an error matching tunnel.ErrFingerprint, ErrAuth or
// ErrDenied.
func OpenThroughTunnel(ctx context.Context, cc tunnel.ClientConfig, dsn string) (store *resultsdb.Store, close func(), err error) {
	if cc.Remote, err = tunnel.DBRemote(dsn); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrTunnelConfig, err)
	}
	c, err := tunnel.NewClient(cc)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrTunnelConfig, err)
	}
	tctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := func() { cancel(); c.Close(); c.Wait() }
	if err := c.Start(tctx); err != nil {
		stop()
		return nil, nil, fmt.Errorf("tunnel to the results database (%s): %w", cc.Server, err)
	}
	local, err := c.DSN(dsn)
	if err == nil {
		store, err = resultsdb.Open(ctx, local)
	}
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("results database through the tunnel: %w", err)
	}
	return store, func() { store.Close(); stop() }, nil
}
