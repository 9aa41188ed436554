package report

import (
	"context"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"sync"
	"time"

	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// The live view of a run (package dashboard serves it): the report's own page and chart
// code, fed each second with the report of the run so far.

// BuildLive builds the report of run id as it stands: Build's report read from store,
// where each step still running has its client-side figures so far, computed from its
// samples with the SQL of the steps' stored figures (Step.Live), and each variant's
// series includes the running step's seconds. Findings are those recorded so far,
// coverage appears once router logs were pulled. It reads the database in one snapshot
// (resultsdb.Store.ReadLiveRun).
func BuildLive(ctx context.Context, store *resultsdb.Store, id string) (*Report, error) {
	return Build(ctx, liveReader{store}, []string{id}, Options{})
}

// LiveDBShare bounds the share of the time a live view of a run (the dashboard, the
// metrics) keeps the results database busy reading it: after a read that took d, the
// next waits at least d / LiveDBShare. A running step's figures and series are computed
// from the samples its generators stored so far, and those queries read every sample of
// the variant so far (BENCHMARKS.md): on a long, fast run a read takes seconds, and the
// view is then updated less often rather than loading the database the run writes to.
const LiveDBShare = 0.1

// LiveRun is a run under way as the views that show it live read it (the dashboard,
// the metrics): one read of the database serves every view that asks within the same
// interval, so a page and a scrape together cost the database and the run's process
// one read. Its methods may be called from any goroutine.
type LiveRun struct {
	store *resultsdb.Store
	id    string

	mu   sync.Mutex // held during a read: a view asking meanwhile gets that read
	last LiveRead
	next time.Time // no read before: the database rests (LiveDBShare)
}

// LiveRead is one read of a LiveRun: the report of the run so far, or why there is none.
type LiveRead struct {
	Report *Report
	Err    error
	At     time.Time     // when the read began; zero before the first
	Took   time.Duration // how long it took
}

// NewLiveRun returns run id of store, not read yet.
func NewLiveRun(store *resultsdb.Store, id string) *LiveRun {
	return &LiveRun{store: store, id: id}
}

// ID is the run's id.
func (l *LiveRun) ID() string { return l.id }

// Read returns the newest read of the run, reading the database again only when the
// last read began about every ago or longer and the database has rested after it as
// LiveDBShare asks (a read of d: 10 d). A view that gets a read it has seen (the same
// At) has nothing new to show.
func (l *LiveRun) Read(ctx context.Context, every time.Duration) LiveRead {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	// 9/10: a view asking every interval on a ticker asks a little early at times.
	if !l.last.At.IsZero() && (now.Before(l.next) || now.Sub(l.last.At) < every*9/10) {
		return l.last
	}
	rep, err := BuildLive(ctx, l.store, l.id)
	took := time.Since(now)
	l.last = LiveRead{Report: rep, Err: err, At: now, Took: took}
	l.next = now.Add(time.Duration(float64(took) / LiveDBShare))
	return l.last
}

// liveReader reads a run with its running steps' figures computed live.
type liveReader struct{ store *resultsdb.Store }

var _ Reader = liveReader{}

func (l liveReader) ReadRun(ctx context.Context, id string, width func(spanS float64) float64) (*resultsdb.ReportRows, error) {
	return l.store.ReadLiveRun(ctx, id, width)
}

//go:embed assets/live.js
var liveJS string

// liveCSS makes the live page usable on a phone's width: wide charts and tables scroll
// sideways inside the page instead of widening it.
const liveCSS = `
body { max-width: 1100px; }
#report figure.chart, #report table { max-width: 100%; overflow-x: auto; display: block; }
p.live { position: sticky; top: 0; background: #fff; margin: 0; padding: 4px 0; border-bottom: 1px solid #ddd; }
p.live.final { color: #2a6a2a; }
p.live.problem { color: #b00020; }
`

var livePageTemplate = template.Must(template.New("live").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; connect-src 'self'">
<title>{{.Title}}</title>
<style>{{.UplotCSS}}</style>
<style>{{.CSS}}</style>
<style>{{.LiveCSS}}</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p class="live" id="live-status">connecting…</p>
<p class="generated">cf-benchmark live view: the run's report so far, updated every second from the results database. Charts by uPlot {{.UplotVersion}} (MIT), embedded; this page fetches nothing but its own updates.</p>
<div id="report"></div>
<script>{{.UplotJS}}</script>
<script>{{.JS}}</script>
<script>{{.LiveJS}}</script>
</body>
</html>
`))

// WriteLivePage writes the live page of a run: the report's page without data, whose
// script (assets/live.js) subscribes to the server-sent events at the relative URL
// "events" and draws each report it receives with the report's own chart code. Events:
// "report" ({"report": the report so far, this package's JSON, "read_s": how long reading
// it took, "every_s": how often the page is updated}), "waiting" and "problem" ({"message"}),
// and "final" ({"report", "message"}: the run's final report, or why there is none),
// after which the page stops listening and keeps showing it.
func WriteLivePage(w io.Writer, title string) error {
	err := livePageTemplate.Execute(w, map[string]any{
		"Title": title, "UplotVersion": uplotVersion,
		// Trusted, embedded content, as in WriteHTML.
		"UplotCSS": template.CSS(uplotCSS),
		"CSS":      template.CSS(reportCSS),
		"LiveCSS":  template.CSS(liveCSS),
		"UplotJS":  template.JS("/*! uPlot " + uplotVersion + ", https://github.com/leeoniya/uPlot, vendored from the npm package uplot\n" + uplotLicense + "*/\n" + uplotJS),
		"JS":       template.JS(reportJS),
		"LiveJS":   template.JS(liveJS),
	})
	if err != nil {
		return fmt.Errorf("write the live page: %w", err)
	}
	return nil
}
