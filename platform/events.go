package platform

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/cloudfoundry/go-cfclient/v3/client"
	"github.com/cloudfoundry/go-cfclient/v3/resource"
)

// The audit events Cloud Controller records when an instance of an app stops without
// being asked to, or is replaced: what InstanceEvents reads.
const (
	// EventProcessCrash is Diego's report of an instance that exited (crashed, or
	// was killed at its memory limit: exit_description says which).
	EventProcessCrash = "audit.app.process.crash"
	// EventAppCrash is the older name of the same report; CC records both.
	EventAppCrash = "app.crash"
	// EventRescheduling is an instance started elsewhere while its cell is
	// evacuated (a rolling upgrade of the cells).
	EventRescheduling = "audit.app.process.rescheduling"
	// EventTerminateInstance is an instance restarted through the API (cf
	// restart-app-instance).
	EventTerminateInstance = "audit.app.process.terminate_instance"
)

// InstanceEventTypes are the event types InstanceEvents reads by default.
var InstanceEventTypes = []string{EventProcessCrash, EventAppCrash, EventRescheduling, EventTerminateInstance}

// ErrEventsForbidden is returned when the user may not read audit events (CC answers
// 403: the user's roles do not include one that sees them).
var ErrEventsForbidden = errors.New("not authorized to read audit events")

// AuditEvent is one of an app's instance events as CC recorded it, with the fields
// of its data the run judges; Data holds all of it.
type AuditEvent struct {
	GUID    string
	Type    string
	Created time.Time // CC's created_at: whole seconds on Cloud Foundry
	AppGUID string
	AppName string
	// Index is the instance's index (data.index, or process_index for
	// terminate_instance); -1 when the event does not say.
	Index int
	// Instance is the instance's guid (data.instance), "" when not said.
	Instance    string
	ProcessType string
	// Reason is data.reason (CRASHED, "Cell is being evacuated"); ExitDescription
	// why the process ended ("APP/PROC/WEB: Exited with status 137 (out of
	// memory)").
	Reason, ExitDescription string
	CellID                  string
	CrashCount              int
	// CrashTime is data.crash_timestamp (when Diego saw the crash, to the
	// nanosecond); zero when absent.
	CrashTime time.Time
	Data      map[string]any
}

// At is when the event happened as closely as it says: the crash's own timestamp
// where there is one, else when CC recorded it.
func (e AuditEvent) At() time.Time {
	if !e.CrashTime.IsZero() {
		return e.CrashTime
	}
	return e.Created
}

// InstanceEvents lists the audit events of types (InstanceEventTypes when nil) whose
// target is one of apps, created at since or later (CC's created_at has whole
// seconds: since is rounded down to one, so an event of since's second is in), oldest
// first, reading every page. A user who may not read them gets ErrEventsForbidden.
func (c *CF) InstanceEvents(ctx context.Context, apps []string, types []string, since time.Time) ([]AuditEvent, error) {
	if len(apps) == 0 {
		return nil, nil
	}
	if types == nil {
		types = InstanceEventTypes
	}
	opts := client.NewAuditEventListOptions()
	opts.TargetGUIDs.EqualTo(apps...)
	opts.Types.EqualTo(types...)
	from := since.UTC().Truncate(time.Second)
	if !since.IsZero() {
		opts.CreatedAts.AfterOrEqualTo(from)
	}
	opts.OrderBy = "created_at"
	opts.PerPage = 200
	list, err := c.cl.AuditEvents.ListAll(ctx, opts)
	if err != nil {
		if forbidden(err) {
			return nil, fmt.Errorf("list audit events: %w", ErrEventsForbidden)
		}
		return nil, fmt.Errorf("list audit events: %w", err)
	}
	out := make([]AuditEvent, 0, len(list))
	for _, r := range list {
		// A CC that ignores a filter (an older one) still gets only what was asked.
		if !slices.Contains(apps, r.Target.GUID) || !slices.Contains(types, r.Type) || (!since.IsZero() && r.CreatedAt.Before(from)) {
			continue
		}
		out = append(out, auditEvent(r))
	}
	slices.SortStableFunc(out, func(a, b AuditEvent) int { return a.Created.Compare(b.Created) })
	return out, nil
}

// forbidden says whether err is CC's 403.
func forbidden(err error) bool {
	var h resource.CloudFoundryHTTPError
	return resource.IsNotAuthorizedError(err) || (errors.As(err, &h) && h.StatusCode == http.StatusForbidden)
}

// auditEvent reads the fields of r's data the run judges; data of an unexpected
// shape leaves them empty, never fails.
func auditEvent(r *resource.AuditEvent) AuditEvent {
	e := AuditEvent{GUID: r.GUID, Type: r.Type, Created: r.CreatedAt.UTC(), AppGUID: r.Target.GUID, AppName: r.Target.Name, Index: -1}
	if r.Data != nil {
		// Numbers as written: crash_timestamp has more digits than a float64 keeps.
		d := json.NewDecoder(bytes.NewReader(*r.Data))
		d.UseNumber()
		_ = d.Decode(&e.Data)
	}
	str := func(k string) string { s, _ := e.Data[k].(string); return s }
	num := func(k string) (int64, bool) {
		switch v := e.Data[k].(type) {
		case json.Number:
			if n, err := v.Int64(); err == nil {
				return n, true
			}
			f, err := v.Float64()
			return int64(f), err == nil
		case string: // some CCs send crash_timestamp as a string
			n, err := strconv.ParseInt(v, 10, 64)
			return n, err == nil
		}
		return 0, false
	}
	e.Instance, e.Reason, e.ExitDescription, e.CellID = str("instance"), str("reason"), str("exit_description"), str("cell_id")
	e.ProcessType = str("process_type")
	if n, ok := num("index"); ok {
		e.Index = int(n)
	} else if n, ok := num("process_index"); ok {
		e.Index = int(n)
	}
	if n, ok := num("crash_count"); ok {
		e.CrashCount = int(n)
	}
	if n, ok := num("crash_timestamp"); ok && n > 0 {
		e.CrashTime = time.Unix(0, n).UTC()
	}
	return e
}

// InstanceStat is what process stats say of one instance for telling a restart or a
// move: CC gives a new instance guid (and on another cell, another host) at every
// start, and restarts uptime at every state change.
type InstanceStat struct {
	Index  int
	GUID   string
	State  string // RUNNING, STARTING, CRASHED, DOWN
	Host   string
	Uptime time.Duration
	// Details is CC's reason for a state, where it gives one (a placement error).
	Details string
}

// InstanceStats reads the process's stats (GET /v3/processes/:guid/stats), one
// entry per desired instance.
func (c *CF) InstanceStats(ctx context.Context, processGUID string) ([]InstanceStat, error) {
	st, err := c.cl.Processes.GetStats(ctx, processGUID)
	if err != nil {
		return nil, fmt.Errorf("read the stats of process %s: %w", processGUID, err)
	}
	out := make([]InstanceStat, 0, len(st.Stats))
	for _, s := range st.Stats {
		in := InstanceStat{Index: s.Index, GUID: s.InstanceGuid, State: s.State, Host: s.Host, Uptime: time.Duration(s.Uptime) * time.Second}
		if s.Details != nil {
			in.Details = *s.Details
		}
		out = append(out, in)
	}
	return out, nil
}
