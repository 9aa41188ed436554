package foundation

import (
	"context"
	"path/filepath"
	"time"

	"github.com/cf-benchmark/cf-benchmark/foundation/cc"
	"github.com/cf-benchmark/cf-benchmark/foundation/logcache"
	"github.com/cf-benchmark/cf-benchmark/foundation/logship"
)

// shipperWriter keeps the access-log file going when the shipper refuses a line (after
// Close, or over its buffer): io.MultiWriter stops at the first error.
type shipperWriter struct{ s *logship.Shipper }

func (w shipperWriter) Write(p []byte) (int, error) {
	w.s.Write(p) // refusals are counted in the shipper's Stats
	return len(p), nil
}

// apps labels shipped log lines with the API's app names, spaces and orgs.
type apps struct{ cc *cc.Server }

func (a apps) App(guid string) (logship.AppInfo, bool) {
	m, ok := a.cc.AppMeta(guid)
	return logship.AppInfo{Name: m.Name, SpaceName: m.SpaceName, SpaceGUID: m.SpaceGUID, OrgName: m.OrgName, OrgGUID: m.OrgGUID}, ok
}

// appLogInterval is how often instance output is moved into the Log Cache.
const appLogInterval = 250 * time.Millisecond

// tailAppLogs moves instance output from the cells' log files, and the router's lines
// from its access log, into the Log Cache and to the apps' drains until
// stopTailingAppLogs.
func (f *Foundation) tailAppLogs(context.Context) error {
	dir := f.cfg.StateDir
	a := newAppLogs(filepath.Join(dir, "instances"), filepath.Join(dir, "access.log"), f.logs, func(process string) (string, bool) {
		_, ok := f.cc.AppMeta(process)
		return process, ok
	})
	a.drains = func(e logcache.Envelope) {
		f.agent.Line(e.SourceID, e.Tags["source_type"], e.InstanceID, e.Log.Payload, time.Unix(0, e.Timestamp))
	}
	f.logsStop, f.logsDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(f.logsDone)
		t := time.NewTicker(appLogInterval)
		defer t.Stop()
		for {
			select {
			case <-f.logsStop:
				return
			case now := <-t.C:
				a.scan(now)
			}
		}
	}()
	return nil
}

func (f *Foundation) stopTailingAppLogs() error {
	close(f.logsStop)
	<-f.logsDone
	return nil
}

// appLog puts a line Cloud Controller writes to an app's log (staging output, crash
// notes) into the Log Cache and to the app's drains.
func (f *Foundation) appLog(app, sourceType, instance, line string) {
	e := appLogEnvelope(app, sourceType, instance, line, time.Now().UnixNano())
	f.logs.Put(e)
	if f.agent != nil {
		f.agent.Line(app, sourceType, instance, []byte(line), time.Unix(0, e.Timestamp))
	}
}

// logReaders lets a token of the API read the Log Cache of the apps the API knows,
// as the CF auth proxy lets a user read the apps CC shows them (the one user sees
// every app); other sources, such as platform components, are for admins only.
type logReaders struct{ cc *cc.Server }

var _ logcache.Authorizer = logReaders{}

func (l logReaders) Authenticated(authorization string) bool {
	return l.cc.Authenticated(authorization)
}

func (l logReaders) CanRead(authorization, sourceID string) bool {
	if !l.Authenticated(authorization) {
		return false
	}
	_, ok := l.cc.AppMeta(sourceID)
	return ok
}

// LogShipping reports the counters of the shipper, or of the log store under quota
// (Shipped: the lines it kept); ok is false when logs go to neither.
func (f *Foundation) LogShipping() (logship.Stats, bool) {
	switch {
	case f.shipper != nil:
		return f.shipper.Stats(), true
	case f.store != nil:
		return f.store.Stats(), true
	}
	return logship.Stats{}, false
}
