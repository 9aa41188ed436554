package drain

import (
	"encoding/json"
	"sync/atomic"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/rfc5424"
)

// ReasonBodySize counts HTTP bodies over Config.MaxBody.
const ReasonBodySize = "body-size"

// badReasons are every reason a frame or message is counted as bad.
var badReasons = []string{
	rfc5424.FieldPriority, rfc5424.FieldVersion, rfc5424.FieldTimestamp, rfc5424.FieldHostname,
	rfc5424.FieldAppName, rfc5424.FieldProcID, rfc5424.FieldMsgID, rfc5424.FieldStructuredData,
	rfc5424.ReasonFrameLength, rfc5424.ReasonFrameSize, rfc5424.ReasonFrameCut, ReasonBodySize,
}

// counters tally what the receiver got; safe for concurrent use.
type counters struct {
	router      atomic.Int64 // RTR messages of the run's apps
	unparseable atomic.Int64 // of those, lines that did not parse
	foreign     atomic.Int64 // of those, without a trace id of the run
	other       atomic.Int64 // other sources' messages of the run's apps
	refusedApp  atomic.Int64 // messages of apps not in the run
	refusedAuth atomic.Int64 // HTTP requests without the run's credentials, syslog connections without a client certificate of the run
	dropped     atomic.Int64 // rows dropped: the buffer was full
	bad         map[string]*atomic.Int64
	// byApp counts RTR messages per app of the run (GUID), so a run can tell that the
	// drain gets each app's lines before it loads them.
	byApp map[string]*atomic.Int64
}

func newCounters(apps map[string]string) *counters {
	c := &counters{bad: make(map[string]*atomic.Int64, len(badReasons)), byApp: make(map[string]*atomic.Int64, len(apps))}
	for _, r := range badReasons {
		c.bad[r] = new(atomic.Int64)
	}
	for guid := range apps {
		c.byApp[guid] = new(atomic.Int64)
	}
	return c
}

// routerLine counts an RTR message of app, one of the run's.
func (c *counters) routerLine(app string) {
	c.router.Add(1)
	if n, ok := c.byApp[app]; ok {
		n.Add(1)
	}
}

func (c *counters) badFrame(reason string) {
	if n, ok := c.bad[reason]; ok {
		n.Add(1)
	}
}

// Counters is a snapshot of what a receiver got, as stored in router_log_pulls.counters.
type Counters struct {
	Router      int64            `json:"router_messages"`
	Unparseable int64            `json:"unparseable"`
	Foreign     int64            `json:"foreign"`
	Other       int64            `json:"other_messages"`
	RefusedApp  int64            `json:"refused_apps"`
	RefusedAuth int64            `json:"refused_auth"`
	Dropped     int64            `json:"dropped"`
	BadFrames   map[string]int64 `json:"bad_frames,omitempty"`
	// RouterByApp is Router per app GUID of the run.
	RouterByApp map[string]int64 `json:"router_messages_by_app,omitempty"`
}

func (c *counters) snapshot() Counters {
	s := Counters{Router: c.router.Load(), Unparseable: c.unparseable.Load(), Foreign: c.foreign.Load(),
		Other: c.other.Load(), RefusedApp: c.refusedApp.Load(), RefusedAuth: c.refusedAuth.Load(), Dropped: c.dropped.Load()}
	for r, n := range c.bad {
		if v := n.Load(); v > 0 {
			if s.BadFrames == nil {
				s.BadFrames = map[string]int64{}
			}
			s.BadFrames[r] = v
		}
	}
	for app, n := range c.byApp {
		if v := n.Load(); v > 0 {
			if s.RouterByApp == nil {
				s.RouterByApp = map[string]int64{}
			}
			s.RouterByApp[app] = v
		}
	}
	return s
}

// plus adds o to s (a previous receiver's totals).
func (s Counters) plus(o Counters) Counters {
	s.Router += o.Router
	s.Unparseable += o.Unparseable
	s.Foreign += o.Foreign
	s.Other += o.Other
	s.RefusedApp += o.RefusedApp
	s.RefusedAuth += o.RefusedAuth
	s.Dropped += o.Dropped
	for r, n := range o.BadFrames {
		if s.BadFrames == nil {
			s.BadFrames = map[string]int64{}
		}
		s.BadFrames[r] += n
	}
	for app, n := range o.RouterByApp {
		if s.RouterByApp == nil {
			s.RouterByApp = map[string]int64{}
		}
		s.RouterByApp[app] += n
	}
	return s
}

func (s Counters) json() json.RawMessage {
	b, _ := json.Marshal(s) // plain numbers and a string map: cannot fail
	return b
}
