package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/cf-benchmark/cf-benchmark/platform"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// This file watches the instances of the apps the run pushed (the apps under test, the
// generator apps, the tunnel and the relay) for what the platform did to them during a
// step: a crash, an OOM kill, a restart, a move to another cell. Such a step's errors
// and latency are the platform's doing, not the load's, and without a finding nothing
// in the run names it (a crash restarted at once shows in process stats as STARTING,
// never CRASHED). The Cloud Controller's audit events are read at the end of every step
// (one request for all the apps); a user who may not read them (403) gets the same
// checks from process stats at the end of every step, and is told once.

// The checks on the run's instances, as in Finding.Check; checks.instance_events sets
// their level.
const (
	InstanceCrashedCheck   = "instance_crashed"
	InstanceOOMCheck       = "instance_oom"
	InstanceRestartedCheck = "instance_restarted"
	InstanceMovedCheck     = "instance_moved"
)

// The roles of the apps whose instances the run watches, as in a finding's evidence.
const (
	InstanceRoleApp       = "app"
	InstanceRoleGenerator = "generator"
	InstanceRoleTunnel    = "tunnel"
	InstanceRoleRelay     = "relay"
)

// InstanceEvent is one thing that happened to an instance of a watched app.
type InstanceEvent struct {
	// Check is the finding it makes: InstanceCrashedCheck, ...
	Check        string
	App, Role    string
	Index        int    // -1 when unknown
	InstanceGUID string // the instance it happened to; "" when unknown
	// Reason is why: the crash's exit_description, the event's reason, or what the
	// process stats showed.
	Reason string
	At     time.Time
	// Source is the audit event's type, or "process_stats".
	Source     string
	Cell       string
	CrashCount int
}

// watchedApp is an app of the run whose instances are watched.
type watchedApp struct {
	Name, GUID, ProcessGUID, Role string
}

// instanceSource is what the watcher reads: *platform.CF. Called from the run's
// goroutine only.
type instanceSource interface {
	InstanceEvents(ctx context.Context, apps []string, types []string, since time.Time) ([]platform.AuditEvent, error)
	InstanceStats(ctx context.Context, processGUID string) ([]platform.InstanceStat, error)
}

var _ instanceSource = (*platform.CF)(nil)

// stepWindow is a step as the watcher places events in it: from its planned start
// (warm-up included: a restart then may last into the measured window) to its end.
type stepWindow struct {
	variant    string
	idx        int
	start, end time.Time
}

// placedEvent is an event and the step it happened in (or before, after the step
// before it ended).
type placedEvent struct {
	InstanceEvent
	w stepWindow
}

// instanceWatcher collects the events of its apps and places each in the step whose
// window holds it; one that happened between two steps goes to the step after (a
// restart then is often not over when it starts). Not safe for concurrent use.
type instanceWatcher struct {
	src  instanceSource
	apps map[string]watchedApp // by app guid
	log  *slog.Logger
	// since is when the watcher started: events before are not the run's. readFrom
	// is where the next read of the events begins: the newest one's created_at read
	// so far (CC records them in order; that second is read again, its events known).
	since, readFrom time.Time
	// statsOnly is set once the events could not be read (403); told once the user
	// was told (note).
	statsOnly, told bool
	seen            map[string]bool // events read, by guid and by what they report
	pending         []InstanceEvent // not yet in a step: after the last window's end
	windows         []stepWindow
	// last is each app's latest stats (by index) and when they were read.
	last   map[string]map[int]platform.InstanceStat
	lastAt map[string]time.Time
}

// newInstanceWatcher watches apps from since on. It reads the events once to learn
// whether it may (forbidden: it falls back to process stats, reading them now as the
// baseline; note says so).
func newInstanceWatcher(ctx context.Context, src instanceSource, apps []watchedApp, since time.Time, log *slog.Logger) *instanceWatcher {
	w := &instanceWatcher{src: src, apps: map[string]watchedApp{}, log: log, since: since, readFrom: since, seen: map[string]bool{},
		last: map[string]map[int]platform.InstanceStat{}, lastAt: map[string]time.Time{}}
	for _, a := range apps {
		if a.GUID != "" {
			w.apps[a.GUID] = a
		}
	}
	w.poll(ctx, time.Time{})
	return w
}

// note is, once, what the user should know: that the events could not be read and
// process stats stand in; "" otherwise.
func (w *instanceWatcher) note() string {
	if !w.statsOnly || w.told {
		return ""
	}
	w.told = true
	return "instance events: the Cloud Controller does not let this user read audit events (403), so crashes, OOM kills, restarts and moves " +
		"of the run's instances are seen from process stats only, at each step's end (a new instance guid, an uptime reset, a new host): " +
		"a crash and an OOM kill are then told only as a restart. Try: a user with a role that reads audit events (space developer or space auditor)"
}

// guids are the watched apps' guids, sorted.
func (w *instanceWatcher) guids() []string {
	out := make([]string, 0, len(w.apps))
	for g := range w.apps {
		out = append(out, g)
	}
	slices.Sort(out)
	return out
}

// poll reads what happened since the last poll into pending. Failures are logged: a
// later poll reads the events again (they are kept by CC), and stats from the poll
// before are compared with the next. Stats tell nothing of an instance that came to
// its state before notBefore (see statsChanges).
func (w *instanceWatcher) poll(ctx context.Context, notBefore time.Time) {
	// A step's end waits for it, also once the run was interrupted: bounded.
	ctx, cancel := context.WithTimeout(ctx, pollTimeout)
	defer cancel()
	if !w.statsOnly {
		evs, err := w.src.InstanceEvents(ctx, w.guids(), nil, w.readFrom)
		switch {
		case errors.Is(err, platform.ErrEventsForbidden):
			w.statsOnly = true
		case err != nil:
			w.log.Warn("read the instance events of the run's apps", "err", err)
			return
		default:
			for _, e := range evs {
				if e.Created.After(w.readFrom) {
					w.readFrom = e.Created
				}
				if ie, ok := w.fromEvent(e); ok {
					w.pending = append(w.pending, ie)
				}
			}
			return
		}
	}
	for _, g := range w.guids() {
		a := w.apps[g]
		if a.ProcessGUID == "" {
			continue
		}
		stats, err := w.src.InstanceStats(ctx, a.ProcessGUID)
		if err != nil {
			w.log.Warn("read the process stats of a watched app", "app", a.Name, "err", err)
			continue
		}
		now := time.Now()
		if prev, ok := w.last[g]; ok {
			w.pending = append(w.pending, statsChanges(a, prev, w.lastAt[g], stats, now, notBefore)...)
		}
		cur := map[int]platform.InstanceStat{}
		for _, s := range stats {
			cur[s.Index] = s
		}
		w.last[g], w.lastAt[g] = cur, now
	}
}

// pollTimeout bounds one look at the events or the stats.
const pollTimeout = 30 * time.Second

// fromEvent is the instance event an audit event reports, false when it was read
// before (by guid, or as the same crash under its other type: CC records a crash both
// as audit.app.process.crash and app.crash) or is not of a watched app.
func (w *instanceWatcher) fromEvent(e platform.AuditEvent) (InstanceEvent, bool) {
	a, ok := w.apps[e.AppGUID]
	if !ok || w.seen[e.GUID] || e.At().Before(w.since.Truncate(time.Second)) {
		return InstanceEvent{}, false
	}
	w.seen[e.GUID] = true
	ie := InstanceEvent{App: a.Name, Role: a.Role, Index: e.Index, InstanceGUID: e.Instance, At: e.At(), Source: e.Type, Cell: e.CellID,
		CrashCount: e.CrashCount}
	switch e.Type {
	case platform.EventProcessCrash, platform.EventAppCrash:
		key := fmt.Sprintf("crash %s %d %s %d", e.AppGUID, e.Index, e.Instance, e.At().UnixNano())
		if w.seen[key] {
			return InstanceEvent{}, false
		}
		w.seen[key] = true
		ie.Check, ie.Reason = InstanceCrashedCheck, e.ExitDescription
		if oom(e.ExitDescription) || oom(e.Reason) {
			ie.Check = InstanceOOMCheck
		}
		if ie.Reason == "" {
			ie.Reason = e.Reason
		}
	case platform.EventRescheduling:
		ie.Check, ie.Reason = InstanceMovedCheck, e.Reason
	case platform.EventTerminateInstance:
		ie.Check, ie.Reason = InstanceRestartedCheck, "restarted through the Cloud Controller API (DELETE …/instances/:index)"
	default:
		return InstanceEvent{}, false
	}
	return ie, true
}

// oom says whether a crash's description is Diego's for an instance killed at its
// memory limit ("APP/PROC/WEB: Exited with status 137 (out of memory)").
func oom(s string) bool {
	s = strings.ToLower(s)
	return strings.Contains(s, "out of memory") || strings.Contains(s, "memory limit")
}

// uptimeSlack is what uptime (whole seconds) and the time between two reads may
// differ by without a restart between them.
const uptimeSlack = 2 * time.Second

// statsChanges are the restarts and moves the process stats of app at now tell
// against those read at prevAt: an instance CRASHED; another instance guid for the
// same index (on another host: moved); an instance RUNNING both times whose uptime
// grew less than the time between the reads; one RUNNING then no more. An index new
// or gone (the app was scaled) tells nothing, nor does an instance in its state since
// before notBefore, the step's start: between two steps the ramp scales, and a
// generator app scaled to 0 after a repeat and up again for the next has new
// instances in the same indexes, which stats cannot tell from restarts.
func statsChanges(a watchedApp, prev map[int]platform.InstanceStat, prevAt time.Time, cur []platform.InstanceStat, now, notBefore time.Time) []InstanceEvent {
	var out []InstanceEvent
	for _, s := range cur {
		p, ok := prev[s.Index]
		if !ok {
			continue
		}
		ev := InstanceEvent{App: a.Name, Role: a.Role, Index: s.Index, InstanceGUID: p.GUID, Source: "process_stats"}
		// Uptime restarts at every state change: now - uptime is when the instance
		// came to its state, within the time between the reads.
		since := now.Add(-s.Uptime)
		if since.Before(prevAt) {
			since = prevAt
		}
		ev.At = since
		if !notBefore.IsZero() && now.Add(-s.Uptime).Before(notBefore) {
			continue
		}
		switch {
		case s.State == "CRASHED":
			ev.Check, ev.Reason = InstanceCrashedCheck, "process stats show it CRASHED"
			if s.Details != "" {
				ev.Reason += ": " + s.Details
			}
		case p.GUID != "" && s.GUID != "" && p.GUID != s.GUID && p.Host != "" && s.Host != "" && p.Host != s.Host:
			ev.Check, ev.Reason = InstanceMovedCheck, fmt.Sprintf("process stats show a new instance (guid %s) on another host (%s, was %s)", s.GUID, s.Host, p.Host)
		case p.GUID != "" && s.GUID != "" && p.GUID != s.GUID:
			ev.Check, ev.Reason = InstanceRestartedCheck, fmt.Sprintf("process stats show a new instance (guid %s, %s %s)", s.GUID, s.State, s.Uptime)
		case p.State == "RUNNING" && s.State == "RUNNING" && s.Uptime+uptimeSlack < p.Uptime+now.Sub(prevAt):
			ev.Check, ev.Reason = InstanceRestartedCheck, fmt.Sprintf("process stats show its uptime reset (%s, %s before)", s.Uptime, (p.Uptime+now.Sub(prevAt)).Round(time.Second))
		case p.State == "RUNNING" && s.State != "RUNNING":
			ev.Check, ev.Reason = InstanceRestartedCheck, "process stats show it "+s.State+", RUNNING before"
		default:
			continue
		}
		out = append(out, ev)
	}
	return out
}

// step adds a step's window (in the order the run's steps ran) and returns the events
// read so far that fall in a step: each with its step, in the order they happened.
// Those after the last window's end stay for the next step.
func (w *instanceWatcher) step(ctx context.Context, win *stepWindow) []placedEvent {
	var notBefore time.Time
	if win != nil {
		w.windows = append(w.windows, *win)
		notBefore = win.start
	}
	w.poll(ctx, notBefore)
	slices.SortStableFunc(w.pending, func(a, b InstanceEvent) int { return a.At.Compare(b.At) })
	var out []placedEvent
	var keep []InstanceEvent
	for _, e := range w.pending {
		i := slices.IndexFunc(w.windows, func(s stepWindow) bool { return !e.At.After(s.end) })
		if i < 0 {
			keep = append(keep, e)
			continue
		}
		out = append(out, placedEvent{InstanceEvent: e, w: w.windows[i]})
	}
	w.pending = keep
	return out
}

// roleWords say what an app of a role is to the run, and what its event does to a step.
var roleWords = map[string]struct{ what, effect string }{
	InstanceRoleApp: {"the app under test",
		"the step's errors and latency around then are the platform's doing, not the load's: the step is marked in the report, and capacity at the SLO says when it rests on it"},
	InstanceRoleGenerator: {"a generator app",
		"the step's load dipped while it was away (its users or its share of the rate did not send): the step is marked in the report"},
	InstanceRoleTunnel: {"the tunnel app, the run's way to the results database",
		"the run's own reads and writes of the results database waited meanwhile; the samples are not affected"},
	InstanceRoleRelay: {"the relay app, the generators' way to the results database",
		"the generators' samples waited in them meanwhile; they are stored when it is back"},
}

// generatorMoved is what a generator's move does to a step: the evacuated instance
// sends until its replacement runs, and the replacement joins the step by itself.
const generatorMoved = "its replacement joined the step while the old instance sent until it stopped, so the step's load was uneven around then: the step is marked in the report"

// InstanceFinding is the finding of an event ev that happened in (or before) step idx
// (0-based) of a variant, whose window began at start; level is checks.instance_events
// (nil when off).
func InstanceFinding(level spec.CheckLevel, ev InstanceEvent, idx int, start time.Time) *Finding {
	if !warns(level) {
		return nil
	}
	words := roleWords[ev.Role]
	if words.what == "" {
		words.what, words.effect = "an app of the run", "the step may have measured it"
	}
	who := fmt.Sprintf("instance %d of %s (%s)", ev.Index, ev.App, words.what)
	if ev.Index < 0 {
		who = fmt.Sprintf("an instance of %s (%s)", ev.App, words.what)
	}
	var what string
	switch ev.Check {
	case InstanceCrashedCheck:
		what = "crashed"
	case InstanceOOMCheck:
		what = "was killed at its memory limit (out of memory)"
	case InstanceRestartedCheck:
		what = "was restarted"
	case InstanceMovedCheck:
		what = "was moved to another cell"
	}
	when := fmt.Sprintf("%s into step %d", ev.At.Sub(start).Round(100*time.Millisecond), idx+1)
	if ev.At.Before(start) {
		when = fmt.Sprintf("%s before step %d started", start.Sub(ev.At).Round(100*time.Millisecond), idx+1)
	}
	msg := fmt.Sprintf("%s %s %s (%s UTC)", who, what, when, ev.At.UTC().Format("15:04:05.000"))
	if ev.Reason != "" {
		msg += ": " + ev.Reason
	}
	if ev.Check == InstanceCrashedCheck || ev.Check == InstanceOOMCheck {
		if ev.CrashCount > 0 {
			msg += fmt.Sprintf(" (crash %d in a row)", ev.CrashCount)
		}
	}
	effect := words.effect
	if ev.Check == InstanceMovedCheck && ev.Role == InstanceRoleGenerator {
		effect = generatorMoved
	}
	msg += ". " + strings.ToUpper(effect[:1]) + effect[1:] + "."
	if ev.Check == InstanceOOMCheck && ev.Role == InstanceRoleApp {
		msg += " Try: more memory for the app (the variant's memory:), or look for what grows under load."
	}
	if ev.Source == "process_stats" {
		msg += " Seen in process stats: the audit events could not be read."
	}
	evidence := map[string]any{"app": ev.App, "role": ev.Role, "index": ev.Index, "instance_guid": ev.InstanceGUID, "reason": ev.Reason,
		"at": ev.At.UTC().Format(time.RFC3339Nano), "source": ev.Source, "seconds_into_step": ev.At.Sub(start).Seconds()}
	if ev.Cell != "" {
		evidence["cell"] = ev.Cell
	}
	if ev.CrashCount > 0 {
		evidence["crash_count"] = ev.CrashCount
	}
	return &Finding{Check: ev.Check, Level: spec.CheckWarn, Message: msg, Evidence: evidence}
}

// watchInstances starts watching the instances of the apps the run pushed (on Cloud
// Foundry, when checks.instance_events is on); r.instances stays nil otherwise.
func (r *runner) watchInstances(ctx context.Context) {
	dep := r.opts.Deployment
	if dep == nil || !warns(r.sp.Checks.InstanceEvents) {
		return
	}
	var apps []watchedApp
	add := func(a *platform.App, role string) {
		if a != nil {
			apps = append(apps, watchedApp{Name: a.Name, GUID: a.GUID, ProcessGUID: a.ProcessGUID, Role: role})
		}
	}
	for _, name := range dep.order {
		dv := dep.variants[name]
		add(dv.app, InstanceRoleApp)
		add(dv.fleet.app, InstanceRoleGenerator)
	}
	add(dep.relay, InstanceRoleRelay)
	if t, err := dep.cf.FindApp(ctx, dep.Access.SpaceGUID, dep.Access.TunnelApp); err == nil {
		add(t, InstanceRoleTunnel)
	} else {
		r.opts.Logger.Warn("find the tunnel app to watch its instances", "err", err)
	}
	r.instances = newInstanceWatcher(ctx, dep.cf, apps, time.Now(), r.opts.Logger)
	r.noteInstances()
}

// noteInstances tells the user, once, that the instance checks rest on process stats.
func (r *runner) noteInstances() {
	if note := r.instances.note(); note != "" {
		r.opts.Reporter.Note(note)
		r.event("", -1, "not_judged", "info", note)
	}
}

// checkInstances records a finding for every event of the run's instances read so far
// that happened up to the end of st (nil: the run's last look, after its last step),
// each at its step.
func (r *runner) checkInstances(ctx context.Context, st *resultsdb.Step) {
	if r.instances == nil {
		return
	}
	var win *stepWindow
	if st != nil {
		win = &stepWindow{variant: st.Variant, idx: st.Index, start: st.Started, end: st.Ends}
	}
	for _, e := range r.instances.step(ctx, win) {
		if f := InstanceFinding(r.sp.Checks.InstanceEvents, e.InstanceEvent, e.w.idx, e.w.start); f != nil {
			r.finding(e.w.variant, e.w.idx, *f)
		}
	}
	r.noteInstances()
}
