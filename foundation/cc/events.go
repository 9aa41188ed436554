package cc

import (
	"bytes"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// auditEventRoutes registers the endpoints of audit events.
func (s *Server) auditEventRoutes() {
	s.handle("GET /v3/audit_events", s.listAuditEvents)
	s.handle("GET /v3/audit_events/{guid}", s.getAuditEvent)
}

// Audit events (GET /v3/audit_events, `cf events`) and the lines Cloud Controller
// writes to an app's log (staging output, crash notes), as CC records and sends them.

// maxAuditEvents bounds the events kept (CC prunes by age, 31 days by default; a count
// keeps state.json small whatever the churn). The oldest go first.
const maxAuditEvents = 5000

// AuditEvent is one recorded event; actor is always the one user.
type AuditEvent struct {
	GUID       string         `json:"guid"`
	Type       string         `json:"type"`
	TargetGUID string         `json:"target_guid"`
	TargetType string         `json:"target_type"`
	TargetName string         `json:"target_name"`
	SpaceGUID  string         `json:"space_guid,omitempty"`
	OrgGUID    string         `json:"org_guid,omitempty"`
	Data       map[string]any `json:"data,omitempty"`
	Created    time.Time      `json:"created_at"`
}

// audit records an event of app a.
func (st *State) audit(typ string, a *App, data map[string]any) {
	ev := &AuditEvent{GUID: newGUID(), Type: typ, TargetGUID: a.GUID, TargetType: "app", TargetName: a.Name,
		SpaceGUID: a.SpaceGUID, Data: data, Created: time.Now().UTC()}
	if sp := st.Spaces[a.SpaceGUID]; sp != nil {
		ev.OrgGUID = sp.OrgGUID
	}
	st.AuditEvents = append(st.AuditEvents, ev)
	if n := len(st.AuditEvents) - maxAuditEvents; n > 0 {
		st.AuditEvents = append([]*AuditEvent(nil), st.AuditEvents[n:]...)
	}
}

func (s *Server) renderAuditEvent(e *AuditEvent) any {
	data := e.Data
	if data == nil {
		data = map[string]any{}
	}
	space, org := any(nil), any(nil)
	if e.SpaceGUID != "" {
		space = obj{"guid": e.SpaceGUID}
	}
	if e.OrgGUID != "" {
		org = obj{"guid": e.OrgGUID}
	}
	return obj{
		"guid": e.GUID, "type": e.Type, "created_at": ts(e.Created), "updated_at": ts(e.Created),
		"actor":  obj{"guid": userGUID, "type": "user", "name": s.cfg.User},
		"target": obj{"guid": e.TargetGUID, "type": e.TargetType, "name": e.TargetName},
		"data":   data, "space": space, "organization": org,
		"links": obj{"self": link(s, "/v3/audit_events/"+e.GUID)},
	}
}

func (s *Server) listAuditEvents(c *call) error {
	q, err := c.query()
	if err != nil {
		return err
	}
	var out []*AuditEvent
	s.st.read(func(st *State) {
		for _, e := range st.AuditEvents {
			if q.match("types", e.Type) && q.match("target_guids", e.TargetGUID) && q.match("space_guids", e.SpaceGUID) &&
				q.match("organization_guids", e.OrgGUID) {
				out = append(out, e)
			}
		}
	})
	return paginate(c, q, out, func(e *AuditEvent) string { return e.Type }, func(e *AuditEvent) time.Time { return e.Created }, s.renderAuditEvent, nil)
}

func (s *Server) getAuditEvent(c *call) error {
	var ev *AuditEvent
	s.st.read(func(st *State) {
		for _, e := range st.AuditEvents {
			if e.GUID == c.r.PathValue("guid") {
				ev = e
			}
		}
	})
	if ev == nil {
		return notFound("Event")
	}
	return c.json(http.StatusOK, s.renderAuditEvent(ev))
}

// logCreated writes the line CC writes to a new app's log (cf logs --recent shows it).
// The state must not be locked: the log pipeline looks the app up.
func (s *Server) logCreated(app string) { s.appLog(app, "API", "0", "Created app with guid "+app) }

// appLog sends one line to app's log, when the foundation takes them.
func (s *Server) appLog(app, sourceType, instance, line string) {
	if s.cfg.AppLog != nil {
		s.cfg.AppLog(app, sourceType, instance, line)
	}
}

// InstanceCrashed records that instance index of process crashed on cell cellID
// (details says why, as Diego's exit description, crashes how often in a row): the
// events app.crash and audit.app.process.crash, as Cloud Controller records both, and
// the line CC writes to the app's log, so that cf events and cf logs show the reason.
func (s *Server) InstanceCrashed(processGUID string, index int, instanceGUID, cellID, details string, crashes int, at time.Time) {
	var app string
	err := s.st.update(func(st *State) error {
		p := st.Processes[processGUID]
		if p == nil {
			return notFound("Process")
		}
		a := st.Apps[p.AppGUID]
		if a == nil {
			return notFound("App")
		}
		app = a.GUID
		data := func() map[string]any {
			return map[string]any{"index": index, "instance": instanceGUID, "cell_id": cellID, "reason": "CRASHED",
				"exit_description": details, "crash_count": crashes, "crash_timestamp": at.UnixNano(), "process_type": p.Type}
		}
		st.audit("app.crash", a, data())
		st.audit("audit.app.process.crash", a, data())
		return nil
	})
	if err != nil {
		return // the app went meanwhile
	}
	s.appLog(app, "API", "0", fmt.Sprintf("App instance exited with guid %s payload: {\"instance\"=>%q, \"index\"=>%d, "+
		"\"cell_id\"=>%q, \"reason\"=>\"CRASHED\", \"exit_description\"=>%q, \"crash_count\"=>%d, \"crash_timestamp\"=>%d}",
		app, instanceGUID, index, cellID, details, crashes, at.UnixNano()))
}

// InstanceRescheduling records that instance index of process, on cell cellID, is
// being moved off it (Diego evacuating the cell): the event
// audit.app.process.rescheduling, as Cloud Controller records it.
func (s *Server) InstanceRescheduling(processGUID string, index int, instanceGUID, cellID string) {
	_ = s.st.update(func(st *State) error {
		p := st.Processes[processGUID]
		if p == nil {
			return notFound("Process")
		}
		a := st.Apps[p.AppGUID]
		if a == nil {
			return notFound("App")
		}
		st.audit("audit.app.process.rescheduling", a, map[string]any{"index": index, "instance": instanceGUID, "cell_id": cellID,
			"reason": "Cell is being evacuated", "process_type": p.Type})
		return nil
	})
}

// lineWriter calls emit for each complete line written, and for the rest at Close;
// staging output goes to the app's log through it.
type lineWriter struct {
	mu   sync.Mutex
	buf  []byte
	emit func(line string)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.emit(string(bytes.TrimRight(w.buf[:i], "\r")))
		w.buf = w.buf[i+1:]
	}
	return len(p), nil
}

func (w *lineWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.emit(string(w.buf))
		w.buf = nil
	}
	return nil
}
