package cells

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
)

// Desire converges a process to spec: it starts missing indexes 0..Instances-1 and
// stops extra ones, highest first. An instance whose command, env, dir, memory, disk or
// isolation segment differ from spec's is restarted (the new one starts once the old
// one is gone); other changes apply to instances started later. It ends a Roll of the
// process under way (ErrSuperseded). Stops are graceful and happen in the
// background; Close waits for them. Before Start the spec is only recorded.
func (c *Cells) Desire(spec ProcessSpec) {
	if !validGUID(spec.ProcessGUID) {
		c.log.Error("ignoring process with an unusable guid", "process_guid", spec.ProcessGUID)
		return
	}
	spec.Env = maps.Clone(spec.Env)
	spec.Instances = max(spec.Instances, 0)

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		c.log.Warn("cells closed, ignoring desired process", "process_guid", spec.ProcessGUID)
		return
	}
	if seg := spec.IsolationSegment; seg != "" && c.cellFor(seg).name != seg {
		c.log.Warn("no cell for the isolation segment, using the first cell", "process_guid", spec.ProcessGUID,
			"isolation_segment", seg, "cell", c.cells[0].name)
	}
	p := c.processLocked(spec.ProcessGUID)
	p.endRoll(ErrSuperseded)
	p.spec = spec
	if c.started {
		c.convergeLocked(p)
	}
}

// processLocked returns the process of guid, made if new.
func (c *Cells) processLocked(guid string) *process {
	p, ok := c.procs[guid]
	if !ok {
		p = &process{insts: map[int]*instance{}, surge: map[int]*instance{}}
		c.procs[guid] = p
	}
	return p
}

// validGUID reports whether guid can name a process's directories.
func validGUID(guid string) bool {
	return guid != "" && !strings.ContainsAny(guid, `/\`) && filepath.IsLocal(guid)
}

func needsRestart(old, cur ProcessSpec) bool {
	return old.Command != cur.Command || old.Dir != cur.Dir || old.MemoryMB != cur.MemoryMB ||
		old.DiskMB != cur.DiskMB || !maps.Equal(old.Env, cur.Env) || old.IsolationSegment != cur.IsolationSegment
}

// convergeLocked stops indexes beyond the spec's count, highest first, and starts each
// missing index and each whose instance runs an older spec (needsRestart).
func (c *Cells) convergeLocked(p *process) {
	c.scaleLocked(p)
	for i := range p.spec.Instances {
		old := p.insts[i]
		if old != nil && !needsRestart(old.spec, p.spec) {
			continue
		}
		if old != nil {
			old.requestStop()
		}
		c.startLocked(p, i)
	}
}

// scaleLocked stops the instances of indexes beyond the spec's count, highest first.
func (c *Cells) scaleLocked(p *process) {
	for _, i := range slices.Backward(slices.Sorted(maps.Keys(p.insts))) {
		if i >= p.spec.Instances {
			p.insts[i].requestStop()
			delete(p.insts, i)
		}
	}
}

// startLocked starts index i of p's spec in its slot, once the slot's previous
// instance is gone.
func (c *Cells) startLocked(p *process, i int) {
	key := instanceKey{p.spec.ProcessGUID, i}
	in := newInstance(c, p.spec, i, c.lastDone[key])
	c.lastDone[key] = in.done
	p.insts[i] = in
	c.runners.Add(1)
	go in.run()
}

// Remove stops every instance of the process gracefully, in the background, and
// forgets it.
func (c *Cells) Remove(processGUID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.procs[processGUID]
	if !ok {
		return
	}
	p.endRoll(ErrSuperseded)
	p.forgetEvacuations()
	for _, i := range slices.Backward(slices.Sorted(maps.Keys(p.insts))) {
		p.insts[i].requestStop()
	}
	delete(c.procs, processGUID)
}
