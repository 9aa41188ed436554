package foundation

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/accesslog"
	"github.com/cf-benchmark/cf-benchmark/foundation/logcache"
)

// appLogs puts the lines instances write into their log files (the cells' LogDir:
// PROCESS/INDEX.log for stdout and the cell's lines, PROCESS/INDEX.err for stderr) into
// the Log Cache as LOG envelopes, as Loggregator carries an app's output, so that
// `cf logs` shows them: the cell's own lines ([CELL/N] …) as source type CELL, the
// app's output as APP/PROC/WEB, stdout as OUT and stderr as ERR. Lines of one scan
// carry the scan's time, each a nanosecond after the one before, so the order between
// an instance's stdout and stderr within one scan is not kept (nor does Loggregator
// promise it). A file is read from where it ended when first seen, so a restarted
// foundation does not replay old output; a line is sent once complete. Only web
// processes are read: their guid is their app's, the Log Cache source.
type appLogs struct {
	dir     string
	store   *logcache.Store
	appOf   func(processGUID string) (appGUID string, ok bool)
	offsets map[string]int64
	partial map[string][]byte
	// drains, when set, also gets every envelope (the syslog agent).
	drains func(logcache.Envelope)
	// accessLog, when set, is the router's access log: each line of an app's request
	// goes to that app's source as an RTR line, as gorouter sends them to Loggregator.
	// Tailing the file keeps the router's hot path free of it.
	accessLog string
}

// maxLogRead bounds what one scan reads of one file, so that a chatty app cannot hold
// the scan up; the rest comes next time.
const maxLogRead = 1 << 20

// newAppLogs reads the instances' logs under dir and, when accessLog is set, the
// router's access log.
func newAppLogs(dir, accessLog string, store *logcache.Store, appOf func(string) (string, bool)) *appLogs {
	a := &appLogs{dir: dir, accessLog: accessLog, store: store, appOf: appOf, offsets: map[string]int64{}, partial: map[string][]byte{}}
	files := instanceLogs(dir)
	if accessLog != "" {
		files = append(files, accessLog)
	}
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil {
			a.offsets[f] = fi.Size()
		}
	}
	return a
}

// scan sends the complete lines written since the previous scan, stamped now and
// each a nanosecond later than the one before, as Loggregator's agents stamp each
// line as they read it: lines of one source never share a timestamp, which a reader
// paging on timestamps (go-log-cache's Walk, which cf logs follows with, goes on from
// the last one it saw plus a nanosecond) would lose at a page's end. Scans are
// appLogInterval apart, far more than their lines' nanoseconds.
func (a *appLogs) scan(now time.Time) {
	ts := now.UnixNano()
	stamp := func() int64 { ts++; return ts - 1 }
	a.scanAccessLog(stamp)
	for _, path := range instanceLogs(a.dir) {
		process := filepath.Base(filepath.Dir(path))
		name, stderr := strings.CutSuffix(filepath.Base(path), ".err")
		index, err := strconv.Atoi(strings.TrimSuffix(name, ".log"))
		if err != nil {
			continue
		}
		app, ok := a.appOf(process)
		if !ok {
			continue
		}
		var envs []logcache.Envelope
		for _, line := range a.lines(path) {
			if stderr {
				e := appLogEnvelope(app, "APP/PROC/WEB", strconv.Itoa(index), string(line), stamp())
				e.Log.Type = "ERR"
				envs = append(envs, e)
			} else {
				envs = append(envs, logEnvelope(app, index, string(line), stamp()))
			}
		}
		a.put(envs)
	}
}

// instanceLogs lists the instances' stdout (.log) and stderr (.err) files under dir.
func instanceLogs(dir string) []string {
	out, _ := filepath.Glob(filepath.Join(dir, "*", "*.log"))
	errs, _ := filepath.Glob(filepath.Join(dir, "*", "*.err"))
	return append(out, errs...)
}

// put stores envelopes and hands them to the drains.
func (a *appLogs) put(envs []logcache.Envelope) {
	if len(envs) == 0 {
		return
	}
	a.store.Put(envs...)
	if a.drains != nil {
		for _, e := range envs {
			a.drains(e)
		}
	}
}

// lines returns the complete lines path got since the last call; a partial last line
// waits for its end.
func (a *appLogs) lines(path string) [][]byte {
	b := a.read(path)
	if len(b) == 0 {
		return nil
	}
	b = append(a.partial[path], b...)
	end := bytes.LastIndexByte(b, '\n')
	if end < 0 {
		a.partial[path] = b
		return nil
	}
	a.partial[path] = append([]byte(nil), b[end+1:]...)
	return bytes.Split(b[:end], []byte("\n"))
}

// scanAccessLog sends the access-log lines of known apps as RTR lines, each stamped
// by stamp. The syslog agent gets the router's lines itself: they do not go to
// drains from here.
func (a *appLogs) scanAccessLog(stamp func() int64) {
	if a.accessLog == "" {
		return
	}
	// Behind by more than one read (a benchmark's load): skip to the newest lines, as
	// Loggregator drops what it cannot carry, so that the scan's CPU stays bounded and
	// cf logs stays current. The cut line fails to parse and is skipped.
	if fi, err := os.Stat(a.accessLog); err == nil && fi.Size()-a.offsets[a.accessLog] > maxLogRead {
		a.offsets[a.accessLog], a.partial[a.accessLog] = fi.Size()-maxLogRead, nil
	}
	var envs []logcache.Envelope
	for _, line := range a.lines(a.accessLog) {
		rec, err := accesslog.ParseGorouter(line)
		if err != nil || rec.AppID == "" {
			continue
		}
		if app, ok := a.appOf(rec.AppID); ok {
			envs = append(envs, appLogEnvelope(app, "RTR", "0", string(line), stamp()))
		}
	}
	if len(envs) > 0 {
		a.store.Put(envs...)
	}
}

// read returns what path holds past its offset, at most maxLogRead, and moves the
// offset on. A file that shrank (replaced) is read from its start.
func (a *appLogs) read(path string) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	off := a.offsets[path]
	if fi.Size() < off {
		off, a.partial[path] = 0, nil
	}
	if fi.Size() == off {
		return nil
	}
	b := make([]byte, min(fi.Size()-off, maxLogRead))
	n, err := f.ReadAt(b, off)
	if err != nil && err != io.EOF {
		return nil
	}
	a.offsets[path] = off + int64(n)
	return b[:n]
}

// logEnvelope is one line as a LOG envelope of app's instance index, stamped ts (Unix
// ns; the time it is read, not written: a reader that follows the newest timestamp,
// cf logs, must not be handed older ones). A cell line, "[CELL/N] RFC3339 text",
// gives its text.
func logEnvelope(app string, index int, line string, ts int64) logcache.Envelope {
	sourceType := "APP/PROC/WEB"
	if rest, ok := strings.CutPrefix(line, "[CELL/"+strconv.Itoa(index)+"] "); ok {
		sourceType, line = "CELL", rest
		if stamp, text, ok := strings.Cut(rest, " "); ok {
			if _, err := time.Parse(time.RFC3339, stamp); err == nil {
				line = text
			}
		}
	}
	return appLogEnvelope(app, sourceType, strconv.Itoa(index), line, ts)
}

// appLogEnvelope is one line of app from sourceType (APP/PROC/WEB, CELL, STG, RTR,
// API) and instance as a LOG envelope, stamped ts (Unix ns).
func appLogEnvelope(app, sourceType, instance, line string, ts int64) logcache.Envelope {
	return logcache.Envelope{Timestamp: ts, SourceID: app, InstanceID: instance,
		Tags: map[string]string{"source_id": app, "instance_id": instance, "source_type": sourceType},
		Log:  &logcache.Log{Payload: []byte(line), Type: "OUT"}}
}
