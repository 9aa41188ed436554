package cells

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Faults on demand, as a Cloud Foundry's cells meet them: an instance's process dies
// (Crash), the kernel kills it at its memory limit (OOM), or the cell is drained for an
// upgrade (Evacuate).

// ErrNoInstance and ErrNoCell say what a fault could not find.
var (
	ErrNoInstance = errors.New("no such instance")
	ErrNoCell     = errors.New("no such cell")
)

// Hit is an instance a fault hit.
type Hit struct {
	ProcessGUID, AppGUID, ProcessType string
	Index                             int
	// InstanceGUID is the guid of the instance hit (for an evacuation, the old one).
	InstanceGUID string
	Cell         string
}

// oomReason is the kill reason of an instance killed for its memory (cgroup OOM, the
// sampled RSS over the limit, or OOM).
const oomReason = "out of memory"

// Crash kills the process group of instance index of the process (SIGKILL), as when an
// app's process dies: the instance crashes and is restarted with Diego's backoff, and
// its exit description is "APP/PROC/WEB: Exited with status 137". It fails with
// ErrNoInstance when that instance has no process running (not started yet, crashed,
// stopped).
func (c *Cells) Crash(processGUID string, index int) (Hit, error) {
	return c.kill(processGUID, index, "")
}

// OOM kills instance index of the process as the kernel kills a container at its
// memory limit: a crash reported as "APP/PROC/WEB: Exited with status 137 (out of
// memory)". The process is sent SIGKILL; its memory is not actually filled.
func (c *Cells) OOM(processGUID string, index int) (Hit, error) {
	return c.kill(processGUID, index, oomReason)
}

func (c *Cells) kill(processGUID string, index int, reason string) (Hit, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.procs[processGUID]
	if p == nil || c.closed {
		return Hit{}, fmt.Errorf("%w: no process %s", ErrNoInstance, processGUID)
	}
	in := p.insts[index]
	if in == nil {
		return Hit{}, fmt.Errorf("%w: process %s has no instance %d (it has %d)", ErrNoInstance, processGUID, index, p.spec.Instances)
	}
	if in.pgid == 0 {
		return Hit{}, fmt.Errorf("%w: instance %d of process %s is %s, with no process to kill", ErrNoInstance, index, processGUID, in.info.State)
	}
	if reason != "" && in.killReason == "" {
		in.killReason = reason
	}
	killGroup(in.pgid, syscall.SIGKILL)
	c.log.Info("instance killed on demand", "process_guid", processGUID, "index", index, "instance_guid", in.info.GUID,
		"reason", cmpOr(reason, "crash"))
	return in.hit(), nil
}

// hit describes the instance; under Cells.mu.
func (in *instance) hit() Hit {
	return Hit{ProcessGUID: in.spec.ProcessGUID, AppGUID: in.spec.AppGUID, ProcessType: in.spec.ProcessType,
		Index: in.index, InstanceGUID: in.info.GUID, Cell: in.cell.name}
}

// CellNames are the names of the cells (the isolation segments they host).
func (c *Cells) CellNames() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, cl := range c.cells {
		out = append(out, cl.name)
	}
	return out
}

// Evacuate drains the cell named cell as Diego evacuates a cell a rolling upgrade
// stops: for each instance there that has a process (STARTING or RUNNING), a
// replacement starts at once, with a new instance guid and port; the old one keeps
// serving (Serving lists both) until the replacement is RUNNING, then stops gracefully.
// Process stats (Instances) show the replacement for that index meanwhile. The local
// foundation has one cell per isolation segment, so the replacement starts on the same
// cell. Evacuate returns the instances it began to move, at once; an instance already
// being evacuated is left to it. It fails with ErrNoCell for an unknown cell.
func (c *Cells) Evacuate(name string) ([]Hit, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !slices.ContainsFunc(c.cells, func(cl *cell) bool { return cl.name == name }) {
		var names []string
		for _, cl := range c.cells {
			names = append(names, fmt.Sprintf("%q", cl.name))
		}
		return nil, fmt.Errorf("%w %q (cells: %s)", ErrNoCell, name, strings.Join(names, ", "))
	}
	if c.closed || !c.started {
		return nil, nil
	}
	hits := []Hit{}
	for _, guid := range slices.Sorted(maps.Keys(c.procs)) {
		p := c.procs[guid]
		for _, i := range slices.Sorted(maps.Keys(p.insts)) {
			old := p.insts[i]
			if old.cell.name != name || old.pgid == 0 || old.stopping() || p.evac[i] != nil {
				continue
			}
			repl := newInstance(c, old.spec, i, nil)
			if p.evac == nil {
				p.evac = map[int]*evacuation{}
			}
			p.evac[i] = &evacuation{old: old, repl: repl}
			c.runners.Add(1)
			go repl.run()
			hits = append(hits, old.hit())
		}
	}
	if len(hits) > 0 && !c.evacuating {
		c.evacuating = true
		c.bg.Add(1)
		go func() {
			defer c.bg.Done()
			c.evacuateLoop()
		}()
	}
	c.log.Info("cell evacuating", "cell", name, "instances", len(hits))
	return hits, nil
}

// evacuation is an instance being moved: old serves until repl is RUNNING.
type evacuation struct{ old, repl *instance }

// evacuateLoop puts replacements in place as they become RUNNING and stops the
// instances they replace, every HealthCheckInterval, until no evacuation is left. A
// replacement whose old instance went meanwhile (stopped, restarted for a new spec, its
// process removed) is stopped.
func (c *Cells) evacuateLoop() {
	for {
		c.mu.Lock()
		left := 0
		for guid, p := range c.procs {
			for i, ev := range p.evac {
				switch {
				case p.insts[i] != ev.old || ev.old.stopping():
					ev.repl.requestStop()
					delete(p.evac, i)
				case ev.repl.info.State == StateRunning:
					if p.roll != nil && p.roll.old[ev.old] {
						// The replacement runs what the old one ran: a roll under way
						// replaces it in turn.
						p.roll.old[ev.repl] = true
					}
					p.insts[i] = ev.repl
					c.lastDone[instanceKey{guid, i}] = ev.repl.done
					ev.old.requestStop()
					delete(p.evac, i)
					c.log.Info("instance evacuated", "process_guid", guid, "index", i,
						"old_instance_guid", ev.old.info.GUID, "instance_guid", ev.repl.info.GUID)
				default:
					left++
				}
			}
		}
		if left == 0 {
			c.evacuating = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		t := time.NewTimer(c.cfg.HealthCheckInterval)
		select {
		case <-c.quit:
			t.Stop()
			return // shutdown stops the replacements
		case <-t.C:
		}
	}
}

// forgetEvacuations stops the replacements of p's evacuations under way; under
// Cells.mu, when p is removed or the cells shut down.
func (p *process) forgetEvacuations() {
	for i, ev := range p.evac {
		ev.repl.requestStop()
		delete(p.evac, i)
	}
}

// Serving reports the instances of a process the router may send requests to: those
// RUNNING, with, during an evacuation, both the old instance of an index and its
// replacement once it runs. Sorted by index.
func (c *Cells) Serving(processGUID string) []Instance {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.procs[processGUID]
	if !ok || !c.started || c.closed {
		return nil
	}
	var out []Instance
	for _, i := range slices.Sorted(maps.Keys(p.insts)) {
		if in := p.insts[i]; in.info.State == StateRunning {
			out = append(out, in.info)
		}
		if ev := p.evac[i]; ev != nil && ev.repl.info.State == StateRunning {
			out = append(out, ev.repl.info)
		}
	}
	return out
}

// exitDescription is how Diego describes an instance's exit, as Cloud Controller
// reports it (exit_description): "APP/PROC/WEB: Exited with status 1", and with
// " (out of memory)" when Garden saw the container killed for its memory. A process
// killed by a signal exits with status 128 + the signal, as the container's shell
// reports it (137 for SIGKILL).
func exitDescription(processType string, status int, oom bool) string {
	d := fmt.Sprintf("APP/PROC/%s: Exited with status %d", strings.ToUpper(cmpOr(processType, "web")), status)
	if oom {
		d += " (out of memory)"
	}
	return d
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
