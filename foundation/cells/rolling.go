package cells

import (
	"errors"
	"maps"
	"slices"
	"time"
)

// ErrSuperseded ends a Roll that a later Desire, Roll or Remove of its process
// replaced; ErrClosed one that the end of Cells stopped.
var (
	ErrSuperseded = errors.New("superseded by a later change of the process")
	ErrClosed     = errors.New("cells closed")
)

// Rollout is a Roll under way.
type Rollout struct {
	done chan struct{}
	err  error // set before done is closed
	// old are the instances it replaces: those in place when it began. Guarded by
	// Cells.mu.
	old map[*instance]bool
}

// Done is closed when the roll has ended.
func (r *Rollout) Done() <-chan struct{} { return r.done }

// Err says how the roll ended, once Done is closed: nil when every instance runs the
// rolled spec, else ErrSuperseded or ErrClosed.
func (r *Rollout) Err() error {
	<-r.done
	return r.err
}

func (r *Rollout) finish(err error) {
	r.err = err
	close(r.done)
}

// endRoll ends the process's roll, if any, with err and stops the instances it had
// started but not yet put in place. Called under Cells.mu.
func (p *process) endRoll(err error) {
	if p.roll == nil {
		return
	}
	for i, in := range p.surge {
		in.requestStop()
		delete(p.surge, i)
	}
	p.roll.finish(err)
	p.roll = nil
}

// Roll brings a process to spec the way Cloud Foundry's rolling deployment does:
// indexes beyond spec's count stop and missing ones start at once, and every instance
// in place when it begins is replaced (a restart, even with an unchanged spec), at
// most maxInFlight at a time (at least one),
// by a new one started beside it; the old one stops once its successor is RUNNING.
// The router sees an index's old instance until the new one takes its place, so a
// process of any size keeps serving while it rolls. A new instance that crashes is
// restarted as any other, and the roll waits for it. Roll returns at once; the
// Rollout says when and how it ends. Before Start the spec is only recorded (as with
// Desire) and the roll is done.
func (c *Cells) Roll(spec ProcessSpec, maxInFlight int) *Rollout {
	return c.RollIndexes(spec, maxInFlight, 0, spec.Instances)
}

// RollIndexes is Roll for the instances of indexes from ≤ i < to only, as a canary
// deployment's steps replace a process a part at a time: the others keep running what
// they ran (until they restart: the process's spec is spec from now on). Missing
// instances start at once whatever their index, as with Roll.
func (c *Cells) RollIndexes(spec ProcessSpec, maxInFlight, from, to int) *Rollout {
	r := &Rollout{done: make(chan struct{})}
	if !validGUID(spec.ProcessGUID) {
		c.log.Error("ignoring process with an unusable guid", "process_guid", spec.ProcessGUID)
		r.finish(ErrSuperseded)
		return r
	}
	spec.Env = maps.Clone(spec.Env)
	spec.Instances = max(spec.Instances, 0)
	maxInFlight = max(maxInFlight, 1)

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		r.finish(ErrClosed)
		return r
	}
	p := c.processLocked(spec.ProcessGUID)
	p.endRoll(ErrSuperseded)
	p.spec = spec
	if !c.started {
		r.finish(nil)
		return r
	}
	c.scaleLocked(p)
	r.old = map[*instance]bool{}
	for i := range spec.Instances {
		if p.insts[i] == nil {
			c.startLocked(p, i)
		} else if from <= i && i < to {
			r.old[p.insts[i]] = true
		}
	}
	p.roll = r
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		c.rollLoop(p, r, maxInFlight)
	}()
	return r
}

// rollLoop puts new instances in place as they become RUNNING and starts the next
// ones, until none of the old instances is left. It checks every HealthCheckInterval.
func (c *Cells) rollLoop(p *process, r *Rollout, maxInFlight int) {
	for {
		c.mu.Lock()
		if p.roll != r { // ended by whoever superseded it, or by the shutdown
			c.mu.Unlock()
			return
		}
		for _, i := range slices.Sorted(maps.Keys(p.surge)) {
			in := p.surge[i]
			if in.info.State != StateRunning {
				continue
			}
			if old := p.insts[i]; old != nil {
				old.requestStop()
			}
			p.insts[i] = in
			c.lastDone[instanceKey{p.spec.ProcessGUID, i}] = in.done
			delete(p.surge, i)
		}
		stale := 0
		for i := range p.spec.Instances {
			old := p.insts[i]
			if old == nil || !r.old[old] || p.surge[i] != nil {
				continue
			}
			stale++
			if len(p.surge) < maxInFlight {
				in := newInstance(c, p.spec, i, nil)
				p.surge[i] = in
				c.runners.Add(1)
				go in.run()
			}
		}
		if stale == 0 && len(p.surge) == 0 {
			p.roll = nil
			r.finish(nil)
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		t := time.NewTimer(c.cfg.HealthCheckInterval)
		select {
		case <-c.quit:
			t.Stop()
			return // shutdown ended the roll
		case <-t.C:
		}
	}
}
