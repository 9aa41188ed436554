// Package routerlogstest is the test suite every routerlogs.Source runs (Run), and the
// data set it runs on: router access-log lines of a run window, other apps' lines and
// lines outside the window mixed in, deterministic for a seed.
package routerlogstest

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs"
	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/accesslog"
)

// Request is one generated router request.
type Request struct {
	Line   string           // the gorouter access-log line
	Record accesslog.Record // the line, parsed
	// App and AppGUID are its app; Emitted is when gorouter wrote the line (the
	// request's time plus its response time, in milliseconds), which Logstash makes
	// @timestamp.
	App, AppGUID string
	Emitted      time.Time
	// Wanted says whether Dataset.Query selects it.
	Wanted bool
}

// Dataset is a generated set of router requests.
type Dataset struct {
	// Query selects the wanted requests: a 20-minute window across midnight (so daily
	// indices split it) and two apps, one given by name and one by GUID.
	Query routerlogs.Query
	// Requests are in line order: by emission time (gorouter writes a line when the
	// response is done), so not by request time.
	Requests []Request
	// Apps maps app GUIDs to names.
	Apps map[string]string
	// Wanted counts the wanted requests; ByID finds a request by vcap_request_id.
	Wanted int
	ByID   map[string]*Request
}

// Apps of a data set: two wanted, one not.
const (
	AppShop  = "shop"
	AppCart  = "cart"
	AppNoise = "noise"
)

// WindowStart is the start of every data set's window.
var WindowStart = time.Date(2024, 3, 18, 23, 50, 0, 0, time.UTC)

// Window is how long the window lasts.
const Window = 20 * time.Minute

// GUID returns the GUID of a data set's app.
func GUID(app string) string {
	switch app {
	case AppShop:
		return "5e0b8f5e-0000-4000-8000-000000000001"
	case AppCart:
		return "ca2700c4-0000-4000-8000-000000000002"
	}
	return "0015e000-0000-4000-8000-000000000003"
}

// Generate makes a data set of wanted requests (in the window, of the wanted apps)
// plus a tenth as many of another app in the window and a twentieth of the wanted
// apps an hour before and after the window. Requests are in groups of up to 8 that
// gorouter emitted in the same millisecond, so that documents share @timestamp values
// across page boundaries. Every request starts at least a second inside the window
// and ends at least a second before its end, so a window on the request time and one
// on the emission time select the same requests.
func Generate(wanted int, seed uint64) *Dataset {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	d := &Dataset{
		Query: routerlogs.Query{From: WindowStart, To: WindowStart.Add(Window), Apps: []string{AppShop, GUID(AppCart)}},
		Apps:  map[string]string{GUID(AppShop): AppShop, GUID(AppCart): AppCart, GUID(AppNoise): AppNoise},
		ByID:  map[string]*Request{},
	}
	noise, outside := wanted/10, wanted/20
	total := wanted + noise + outside
	// Emission times: groups in the window's inner part, in order, as gorouter
	// writes (and Logstash ships) lines when responses finish.
	inner := Window - 4*time.Second
	groups := int64(max(1, total/4))
	d.Requests = make([]Request, 0, total)
	kinds := make([]int, 0, total) // 0 wanted, 1 noise, 2 outside
	for range wanted {
		kinds = append(kinds, 0)
	}
	for range noise {
		kinds = append(kinds, 1)
	}
	for range outside {
		kinds = append(kinds, 2)
	}
	rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	var emitted time.Time
	left, group := 0, int64(0)
	for i, kind := range kinds {
		if left == 0 {
			emitted = WindowStart.Add(2*time.Second + inner*time.Duration(group)/time.Duration(groups)).Truncate(time.Millisecond)
			group++
			left = 1 + rng.IntN(8)
		}
		left--
		at := emitted
		app := AppShop
		if rng.IntN(3) == 0 {
			app = AppCart
		}
		switch kind {
		case 1:
			app = AppNoise
		case 2:
			at = emitted.Add(-time.Hour)
			if rng.IntN(2) == 0 {
				at = emitted.Add(time.Hour)
			}
		}
		line, rt := makeLine(i, rng, app, at)
		rec, err := accesslog.ParseGorouter([]byte(line))
		if err != nil {
			panic(fmt.Sprintf("routerlogstest: generated a bad line: %v\n%s", err, line))
		}
		if got := rec.Time.Add(rt).Truncate(time.Millisecond); !got.Equal(at) {
			panic(fmt.Sprintf("routerlogstest: line %d emitted at %v, want %v", i, got, at))
		}
		d.Requests = append(d.Requests, Request{Line: line, Record: rec, App: app, AppGUID: GUID(app), Emitted: at, Wanted: kind == 0})
		if kind == 0 {
			d.Wanted++
		}
	}
	sort.SliceStable(d.Requests, func(i, j int) bool { return d.Requests[i].Emitted.Before(d.Requests[j].Emitted) })
	for i := range d.Requests {
		d.ByID[d.Requests[i].Record.VcapRequestID] = &d.Requests[i]
	}
	return d
}

// makeLine writes request i of app, emitted at the millisecond at, with gorouter's
// fields and a few variants (errors, optional fields, extra headers, a missing
// gorouter_time). It returns the line and its response time.
func makeLine(i int, rng *rand.Rand, app string, at time.Time) (string, time.Duration) {
	rt := time.Duration(1000+rng.IntN(800_000)) * time.Microsecond
	start := at.Add(-rt).Add(time.Duration(rng.IntN(1_000_000))) // ends within the millisecond
	gr := time.Duration(20+rng.IntN(400)) * time.Microsecond
	trace := fmt.Sprintf("%016x%016x", rng.Uint64(), uint64(i))
	vcap := fmt.Sprintf("%s-%s-%s-%s-%s", trace[:8], trace[8:12], trace[12:16], trace[16:20], trace[20:])
	method, uri, status, recv, sent := "GET", fmt.Sprintf("/items/%d?page=%d", i, i%7), "200", 0, 100+rng.IntN(5000)
	routerErr := "-"
	switch {
	case i%50 == 7:
		status, routerErr, sent = "502", "endpoint_failure (dial tcp 10.0.2.3:61001: connect: connection refused)", 67
	case i%23 == 5:
		method, status, recv = "POST", "201", 10+rng.IntN(20000)
	case i%41 == 3:
		status = "404"
	}
	var b strings.Builder
	fmt.Fprintf(&b, `%s.apps.example.com - [%s] "%s %s HTTP/1.1" %s %d %d "-" "hey/0.0.1" "10.0.1.%d:%d" "10.0.2.%d:61001" `,
		app, start.Format("2006-01-02T15:04:05.000000000Z"), method, uri, status, recv, sent, 1+i%200, 1024+i%60000, 1+i%4)
	fmt.Fprintf(&b, `x_forwarded_for:"198.51.100.%d, 10.0.0.1" x_forwarded_proto:"https" vcap_request_id:"%s" `, i%250, vcap)
	if i%97 == 11 {
		b.WriteString(`response_time:` + accesslog.FormatSeconds(rt) + ` gorouter_time:"-" `)
	} else {
		b.WriteString(`response_time:` + accesslog.FormatSeconds(rt) + ` gorouter_time:` + accesslog.FormatSeconds(gr) + ` `)
	}
	fmt.Fprintf(&b, `app_id:"%s" app_index:"%d" instance_id:"inst-%d" x_cf_routererror:"%s" `, GUID(app), i%4, i%4, routerErr)
	if i%13 == 2 {
		fmt.Fprintf(&b, `backend_time:%s failed_attempts:0 `, accesslog.FormatSeconds(rt-gr))
	}
	fmt.Fprintf(&b, `x_b3_traceid:"%s" x_b3_spanid:"%s" x_b3_parentspanid:"-" b3:"%s-%s"`, trace, trace[16:], trace, trace[16:])
	if i%31 == 4 {
		fmt.Fprintf(&b, ` traceparent:"00-%s-%s-01" tenant:"acme"`, trace, trace[16:])
	}
	return b.String(), rt
}

// WantedIDs returns the vcap_request_ids of the wanted requests.
func (d *Dataset) WantedIDs() map[string]bool {
	m := make(map[string]bool, d.Wanted)
	for i := range d.Requests {
		if d.Requests[i].Wanted {
			m[d.Requests[i].Record.VcapRequestID] = true
		}
	}
	return m
}

// ForApps returns a view of d whose query selects only apps (names or GUIDs; some of
// d's) in the same window; the requests are shared.
func (d *Dataset) ForApps(apps ...string) *Dataset {
	v := &Dataset{Query: d.Query, Apps: d.Apps, ByID: map[string]*Request{}}
	v.Query.Apps = apps
	v.Requests = make([]Request, len(d.Requests))
	copy(v.Requests, d.Requests)
	for i := range v.Requests {
		r := &v.Requests[i]
		if r.Wanted {
			r.Wanted = v.Query.WantsApp(r.App, r.AppGUID)
		}
		if r.Wanted {
			v.Wanted++
		}
		v.ByID[r.Record.VcapRequestID] = r
	}
	return v
}

// ForWindow returns a view of d whose query selects the requests gorouter emitted
// (Logstash's @timestamp) from from to to, inclusive, of d's apps; the requests are
// shared. It suits sources that filter on the emission time.
func (d *Dataset) ForWindow(from, to time.Time) *Dataset {
	v := &Dataset{Query: d.Query, Apps: d.Apps, ByID: map[string]*Request{}}
	v.Query.From, v.Query.To = from, to
	v.Requests = make([]Request, len(d.Requests))
	copy(v.Requests, d.Requests)
	for i := range v.Requests {
		r := &v.Requests[i]
		r.Wanted = v.Query.WantsApp(r.App, r.AppGUID) && v.Query.InWindow(r.Emitted)
		if r.Wanted {
			v.Wanted++
		}
		v.ByID[r.Record.VcapRequestID] = r
	}
	return v
}
