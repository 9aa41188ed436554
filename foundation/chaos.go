package foundation

import (
	"errors"
	"time"

	"github.com/cf-benchmark/cf-benchmark/foundation/cc"
	"github.com/cf-benchmark/cf-benchmark/foundation/cells"
	"github.com/cf-benchmark/cf-benchmark/foundation/router"
)

// Faults on demand: what a Cloud Foundry does to the apps on it during a run — an
// instance's process dies or is killed for its memory, a cell is evacuated for an
// upgrade, a router restarts, access tokens expire — done on purpose, and recorded as
// Cloud Foundry records it (crash and rescheduling events, new instance guids). Tests
// call these methods; the CLI (`cf-benchmark foundation chaos`) and clients reach them
// through the API's non-standard link cfbench_chaos (cc/chaos.go).

// Hit is an instance a fault hit.
type Hit = cells.Hit

// ErrNoInstance and ErrNoCell are what faults wrap when they find no instance or cell.
var (
	ErrNoInstance = cells.ErrNoInstance
	ErrNoCell     = cells.ErrNoCell
)

// Crash kills instance index of a process (the web process's guid is its app's) with
// SIGKILL to its process group: a crash, recorded as app.crash and
// audit.app.process.crash ("APP/PROC/WEB: Exited with status 137"), then a restart
// with Diego's backoff. It returns once the kill is sent.
func (f *Foundation) Crash(processGUID string, index int) (Hit, error) {
	return f.cells.Crash(processGUID, index)
}

// OOM kills instance index of a process as the kernel kills a container at its memory
// limit: a crash with the exit description "APP/PROC/WEB: Exited with status 137 (out
// of memory)", then a restart.
func (f *Foundation) OOM(processGUID string, index int) (Hit, error) {
	return f.cells.OOM(processGUID, index)
}

// Evacuate drains the cell (isolation segment) named cell as Diego evacuates one: each
// instance there gets a replacement (a new instance guid and port, on the same cell:
// each segment has one), the old one serves until the replacement runs, then stops.
// Each instance moved is recorded as audit.app.process.rescheduling. It returns once
// the replacements are starting.
func (f *Foundation) Evacuate(cell string) ([]Hit, error) {
	hits, err := f.cells.Evacuate(cell)
	for _, h := range hits {
		f.cc.InstanceRescheduling(h.ProcessGUID, h.Index, h.InstanceGUID, h.Cell)
	}
	return hits, err
}

// RestartRouter restarts the router as gorouter drains: it keeps serving for drainWait
// (0: Config.RouterDrainWait), then closes its listener and idle keep-alive
// connections, lets requests in flight finish, and listens again on the same port. It
// returns once the drain has begun; the channel is closed when the router serves
// again.
func (f *Foundation) RestartRouter(drainWait time.Duration) (<-chan struct{}, error) {
	if drainWait <= 0 {
		drainWait = f.cfg.RouterDrainWait
	}
	if drainWait <= 0 {
		drainWait = router.DefaultDrainWait
	}
	return f.router.Restart(drainWait)
}

// ExpireTokens makes every access token issued before at invalid, as if their lifetime
// had run out: clients must refresh theirs.
func (f *Foundation) ExpireTokens(at time.Time) { f.cc.ExpireTokens(at) }

// chaos gives the API's chaos endpoint the foundation's faults.
type chaos struct{ f *Foundation }

var _ cc.Chaos = chaos{}

func (c chaos) Crash(processGUID string, index int, oom bool) (cc.ChaosInstance, error) {
	hit, err := c.f.Crash, error(nil)
	if oom {
		hit = c.f.OOM
	}
	h, err := hit(processGUID, index)
	if err != nil {
		return cc.ChaosInstance{}, chaosErr(err)
	}
	return chaosInstance(h), nil
}

func (c chaos) Evacuate(cell string) ([]cc.ChaosInstance, error) {
	hits, err := c.f.Evacuate(cell)
	if err != nil {
		return nil, chaosErr(err)
	}
	out := make([]cc.ChaosInstance, 0, len(hits))
	for _, h := range hits {
		out = append(out, chaosInstance(h))
	}
	return out, nil
}

func (c chaos) RestartRouter() error {
	_, err := c.f.RestartRouter(0)
	return err
}

func chaosInstance(h Hit) cc.ChaosInstance {
	return cc.ChaosInstance{ProcessGUID: h.ProcessGUID, AppGUID: h.AppGUID, ProcessType: h.ProcessType, Index: h.Index,
		InstanceGUID: h.InstanceGUID, Cell: h.Cell}
}

// chaosErr marks what the API answers with 404.
func chaosErr(err error) error {
	if errors.Is(err, cells.ErrNoInstance) || errors.Is(err, cells.ErrNoCell) {
		return notFound{err}
	}
	return err
}

// notFound is an error the API answers with 404, its message unchanged.
type notFound struct{ error }

func (e notFound) Unwrap() error { return e.error }

func (notFound) Is(target error) bool { return target == cc.ErrChaosNotFound }
