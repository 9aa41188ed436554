package cells

import "fmt"

// Terminate stops instance index of the process gracefully (SIGTERM, StopGrace,
// SIGKILL) and starts another in its slot once it is gone, as Diego does when Cloud
// Controller retires an instance (cf restart-app-instance): a stop, not a crash, so no
// CRASHED event, and the new instance's crash count starts at 0. It returns the guid
// of the instance stopped ("" when none had started yet, such as one in crash
// backoff) and fails with ErrNoInstance for an index the process does not have, or
// before Start and after Close.
func (c *Cells) Terminate(processGUID string, index int) (instanceGUID string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.procs[processGUID]
	if p == nil || !c.started || c.closed {
		return "", fmt.Errorf("%w: no process %s", ErrNoInstance, processGUID)
	}
	old := p.insts[index]
	if old == nil {
		return "", fmt.Errorf("%w: process %s has no instance %d (it has %d)", ErrNoInstance, processGUID, index, p.spec.Instances)
	}
	instanceGUID = old.info.GUID
	old.requestStop()
	c.startLocked(p, index) // starts once old is gone
	c.log.Info("instance terminated on request", "process_guid", processGUID, "index", index, "instance_guid", instanceGUID)
	return instanceGUID, nil
}
