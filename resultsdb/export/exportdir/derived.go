package exportdir

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// The figures the database computes from raw rows when it has none stored, computed
// here from the CSV files with the same definitions (resultsdb's SQL).

type stepKey struct {
	variant string
	idx     int
}

// routerSteps reads step_router_metrics, or computes them from the samples, router
// requests and app timings when none were stored, as resultsdb.Store.RouterMetrics does.
func (d *reading) routerSteps(r *resultsdb.ReportRows) ([]resultsdb.RouterStepMetrics, error) {
	var out []resultsdb.RouterStepMetrics
	err := d.each("step_router_metrics", []string{"variant", "step", "sent", "found", "no_response", "seconds", "empty_seconds", "partial_seconds",
		"missing_in_empty", "decomposed", "client_us_sum", "generator_network_us_sum", "router_us_sum", "router_app_us_sum", "app_code_us_sum",
		"pool_wait_us_sum", "query_us_sum"}, func(t *table) {
		m := resultsdb.RouterStepMetrics{Coverage: resultsdb.Coverage{Variant: t.str("variant"), Step: int(t.int("step")) - 1,
			Sent: t.int("sent"), Found: t.int("found"), NoResponse: t.int("no_response"), Seconds: int(t.int("seconds")),
			EmptySeconds: int(t.int("empty_seconds")), PartialSeconds: int(t.int("partial_seconds")), MissingInEmpty: t.int("missing_in_empty")},
			Decomposed: t.int("decomposed"), ClientSumUS: t.float("client_us_sum")}
		for i, c := range []string{"generator_network_us_sum", "router_us_sum", "router_app_us_sum", "app_code_us_sum", "pool_wait_us_sum", "query_us_sum"} {
			m.LayerSumsUS[i] = t.float(c)
		}
		out = append(out, m)
	})
	if err != nil && !errors.Is(err, errNoFile) {
		return nil, err
	}
	if len(out) > 0 {
		slices.SortStableFunc(out, func(a, b resultsdb.RouterStepMetrics) int {
			if c := strings.Compare(a.Variant, b.Variant); c != 0 {
				return c
			}
			return a.Step - b.Step
		})
		return out, nil
	}
	return d.liveRouterSteps()
}

// liveRouterSteps is resultsdb's routerStepsSQL: measured samples joined to their router
// request (by worker and seq) and that request's app timing (by trace id), per second of
// intended time, then per step. Sums of integers as float8 are exact below 2^53, so
// summing them as integers gives the same floats in any order.
func (d *reading) liveRouterSteps() ([]resultsdb.RouterStepMetrics, error) {
	type routerLine struct {
		trace          string
		resp, gorouter *int64
	}
	type sampleKey struct{ worker, seq int64 }
	router := map[sampleKey]routerLine{}
	err := d.each("router_requests", []string{"trace_id", "response_time_us", "gorouter_time_us", "worker_id", "seq"}, func(t *table) {
		router[sampleKey{t.int("worker_id"), t.int("seq")}] = routerLine{t.str("trace_id"), t.optInt("response_time_us"), t.optInt("gorouter_time_us")}
	})
	if err != nil {
		return nil, err
	}
	type timing struct{ total, pool, query int64 }
	app := map[string]timing{}
	if err := d.each("app_timings", []string{"trace_id", "pool_wait_us", "query_us", "total_us"}, func(t *table) {
		app[t.str("trace_id")] = timing{t.int("total_us"), t.int("pool_wait_us"), t.int("query_us")}
	}); err != nil {
		return nil, err
	}
	type second struct {
		sent, found, noResponse, decomposed int64
		sums                                [7]int64 // client, then the six layers
	}
	type secKey struct {
		stepKey
		sec int64
	}
	secs := map[secKey]*second{}
	err = d.each("samples", []string{"variant", "worker_id", "seq", "step", "intended_us", "latency_us", "status", "warmup"}, func(t *table) {
		if t.bool("warmup") {
			return
		}
		k := secKey{stepKey{t.str("variant"), int(t.int("step")) - 1}, t.int("intended_us") / 1000000}
		s := secs[k]
		if s == nil {
			s = &second{}
			secs[k] = s
		}
		s.sent++
		rr, found := router[sampleKey{t.int("worker_id"), t.int("seq")}]
		lat := t.int("latency_us")
		if found {
			s.found++
		} else if t.int("status") == 0 {
			s.noResponse++
		}
		if !found || rr.resp == nil || rr.gorouter == nil {
			return
		}
		a, ok := app[rr.trace]
		if !ok {
			return
		}
		s.decomposed++
		for i, x := range []int64{lat, lat - *rr.resp, *rr.gorouter, *rr.resp - *rr.gorouter - a.total, a.total - a.pool - a.query, a.pool, a.query} {
			s.sums[i] += x
		}
	})
	if err != nil {
		return nil, err
	}
	steps := map[stepKey]*resultsdb.RouterStepMetrics{}
	sums := map[stepKey]*[7]int64{}
	for k, s := range secs {
		m := steps[k.stepKey]
		if m == nil {
			m = &resultsdb.RouterStepMetrics{Coverage: resultsdb.Coverage{Variant: k.variant, Step: k.idx}}
			steps[k.stepKey], sums[k.stepKey] = m, &[7]int64{}
		}
		m.Sent += s.sent
		m.Found += s.found
		m.NoResponse += s.noResponse
		m.Seconds++
		switch {
		case s.found == 0:
			m.EmptySeconds++
			m.MissingInEmpty += s.sent
		case s.found < s.sent:
			m.PartialSeconds++
		}
		m.Decomposed += s.decomposed
		for i := range s.sums {
			sums[k.stepKey][i] += s.sums[i]
		}
	}
	out := make([]resultsdb.RouterStepMetrics, 0, len(steps))
	for k, m := range steps {
		m.ClientSumUS = float64(sums[k][0])
		for i := range m.LayerSumsUS {
			m.LayerSumsUS[i] = float64(sums[k][i+1])
		}
		out = append(out, *m)
	}
	slices.SortFunc(out, func(a, b resultsdb.RouterStepMetrics) int {
		if c := strings.Compare(a.Variant, b.Variant); c != 0 {
			return c
		}
		return a.Step - b.Step
	})
	return out, nil
}

// series reads each variant's series from step_series when the intervals are seconds
// and every step of the variant has its series stored, else computes it from the
// samples, as resultsdb.Store.ReadRun does; points are ordered by their mean intended
// time. A stored series without its p50 (an export of schema v15 or older, or a row
// stored then: p50_us empty) is computed from the samples too, as the database computes
// such a step's; an export without samples.csv keeps it as stored, without a p50
// (resultsdb.SeriesPoint.P50US nil).
func (d *reading) series(r *resultsdb.ReportRows) error {
	r.Series = map[string][]resultsdb.SeriesPoint{}
	stored := map[string][]resultsdb.SeriesPoint{}
	storedSteps := map[string]int{}
	noP50 := map[string]bool{}
	if r.IntervalS == 1 {
		err := d.each("step_series", []string{"variant", "step", "second", "count", "errors", "p99_us", "intended_mean_us"}, func(t *table) {
			v, idx := t.str("variant"), int(t.int("step"))-1
			var (
				k, n, errs, p50, p99 []int64
				mean                 []float64
			)
			type array struct {
				col string
				to  any
			}
			arrays := []array{{"second", &k}, {"count", &n}, {"errors", &errs}, {"p99_us", &p99}, {"intended_mean_us", &mean}}
			_, hasP50 := t.cols["p50_us"] // exports of schema v16 and later
			if hasP50 {
				_, null := t.raw("p50_us")
				hasP50 = !null
			}
			if hasP50 {
				arrays = append(arrays, array{"p50_us", &p50})
			}
			for _, c := range arrays {
				if err := json.Unmarshal([]byte(t.str(c.col)), c.to); err != nil {
					t.fail(c.col, t.str(c.col), "a JSON array of numbers")
					return
				}
			}
			if len(n) != len(k) || len(errs) != len(k) || len(p99) != len(k) || len(mean) != len(k) || (hasP50 && len(p50) != len(k)) {
				t.fail("second", t.str("second"), "an array as long as the row's others")
				return
			}
			storedSteps[v]++
			if !hasP50 {
				noP50[v] = true
			}
			for i := range k {
				p := resultsdb.SeriesPoint{Idx: idx, K: k[i], N: n[i], Errs: errs[i], P99US: p99[i], MeanUS: mean[i]}
				if hasP50 {
					p.P50US = &p50[i]
				}
				stored[v] = append(stored[v], p)
			}
		})
		if err != nil && !errors.Is(err, errNoFile) {
			return err
		}
	}
	steps := map[string]int{}
	for _, s := range r.Steps {
		steps[s.Variant]++
	}
	samples := d.has("samples")
	var live []string
	for _, v := range r.Variants {
		if r.IntervalS == 1 && steps[v.Name] == storedSteps[v.Name] && (!noP50[v.Name] || !samples) {
			pts := stored[v.Name]
			slices.SortStableFunc(pts, func(a, b resultsdb.SeriesPoint) int { return cmpFloat(a.MeanUS, b.MeanUS) })
			r.Series[v.Name] = pts
			continue
		}
		live = append(live, v.Name)
	}
	if len(live) == 0 {
		return nil
	}
	return d.liveSeries(r, live)
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// liveSeries is resultsdb's series from the samples: per step and interval of
// intended time (intended_us / width in µs, truncated), the count, the errors (an error
// class or a status ≥ 400), percentile_disc(0.5) and (0.99) of the latency and
// avg(intended_us).
func (d *reading) liveSeries(r *resultsdb.ReportRows, variants []string) error {
	widthUS := int64(r.IntervalS * 1e6)
	type key struct {
		stepKey
		k int64
	}
	type group struct {
		n, errs int64
		sum     big.Int
		lat     []int64
	}
	groups := map[key]*group{}
	var x big.Int
	err := d.each("samples", []string{"variant", "step", "intended_us", "latency_us", "status", "error"}, func(t *table) {
		v := t.str("variant")
		if !slices.Contains(variants, v) {
			return
		}
		intended := t.int("intended_us")
		k := key{stepKey{v, int(t.int("step")) - 1}, intended / widthUS}
		g := groups[k]
		if g == nil {
			g = &group{}
			groups[k] = g
		}
		g.n++
		if t.str("error") != "" || t.int("status") >= 400 {
			g.errs++
		}
		g.sum.Add(&g.sum, x.SetInt64(intended))
		g.lat = append(g.lat, t.int("latency_us"))
	})
	if err != nil {
		return err
	}
	for k, g := range groups {
		p50 := percentileDisc(g.lat, 0.5)
		r.Series[k.variant] = append(r.Series[k.variant], resultsdb.SeriesPoint{Idx: k.idx, K: k.k, N: g.n, Errs: g.errs,
			P50US: &p50, P99US: percentileDisc(g.lat, 0.99), MeanUS: numericAvg(&g.sum, g.n)})
	}
	for _, v := range variants {
		slices.SortFunc(r.Series[v], func(a, b resultsdb.SeriesPoint) int {
			if c := cmpFloat(a.MeanUS, b.MeanUS); c != 0 {
				return c
			}
			if a.Idx != b.Idx {
				return a.Idx - b.Idx
			}
			return int(a.K - b.K)
		})
	}
	return nil
}

// percentileDisc is PostgreSQL's percentile_disc(p) WITHIN GROUP (ORDER BY x): the
// first value whose position in the order reaches p of the count (position
// ceil(p·n), at least 1). It sorts xs.
func percentileDisc(xs []int64, p float64) int64 {
	slices.Sort(xs)
	row := int64(math.Ceil(p * float64(len(xs))))
	return xs[max(row, 1)-1]
}

// numericAvg is avg() of bigints cast to float8 as PostgreSQL computes it: the sum
// divided by the count in numeric, rounded half away from zero to the scale
// select_div_scale chooses (at least 16 significant digits), printed and read as a
// float8. Dividing in floats would differ in the last bit now and then.
func numericAvg(sum *big.Int, n int64) float64 {
	count := big.NewInt(n)
	w1, f1 := numericWeight(sum)
	w2, f2 := numericWeight(count)
	qweight := w1 - w2
	if f1 <= f2 {
		qweight--
	}
	rscale := min(max(16-qweight*4, 0), 1000)
	scaled := new(big.Int).Mul(new(big.Int).Abs(sum), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(rscale)), nil))
	q, rem := new(big.Int).QuoRem(scaled, count, new(big.Int))
	if rem.Lsh(rem, 1).Cmp(count) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	digits := q.String()
	if len(digits) <= rscale {
		digits = strings.Repeat("0", rscale-len(digits)+1) + digits
	}
	text := digits[:len(digits)-rscale] + "." + digits[len(digits)-rscale:]
	if sum.Sign() < 0 {
		text = "-" + text
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		panic(fmt.Sprintf("exportdir: %q: %v", text, err)) // built above from digits
	}
	return f
}

// numericWeight is the weight (index of the leading base-10000 digit) and that digit of
// |x| as PostgreSQL's numeric stores it; 0, 0 for zero.
func numericWeight(x *big.Int) (weight, first int) {
	a := new(big.Int).Abs(x)
	if a.Sign() == 0 {
		return 0, 0
	}
	base := big.NewInt(10000)
	for a.Cmp(base) >= 0 {
		a.Quo(a, base)
		weight++
	}
	return weight, int(a.Int64())
}

// memory is resultsdb's memory series: per app, the polls of RUNNING instances with a
// memory reading, each the numeric avg of its instances' memory, then per interval of
// floor(t / width) the first poll's t, the polls' mean summed in time order, and the
// largest limit.
func (d *reading) memory(r *resultsdb.ReportRows) error {
	type pollKey struct {
		app string
		at  int64
	}
	type poll struct {
		sum   big.Int
		n     int64
		quota *int64
	}
	polls := map[pollKey]*poll{}
	var x big.Int
	err := d.each("container_metrics", []string{"at", "app_name", "state", "mem_bytes", "mem_quota_bytes"}, func(t *table) {
		mem := t.optInt("mem_bytes")
		if mem == nil || t.str("state") != "RUNNING" {
			return
		}
		k := pollKey{t.str("app_name"), t.time("at").UnixMicro()}
		p := polls[k]
		if p == nil {
			p = &poll{}
			polls[k] = p
		}
		p.sum.Add(&p.sum, x.SetInt64(*mem))
		p.n++
		if q := t.optInt("mem_quota_bytes"); q != nil && (p.quota == nil || *q > *p.quota) {
			p.quota = q
		}
	})
	if err != nil {
		return err
	}
	keys := make([]pollKey, 0, len(polls))
	for k := range polls {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b pollKey) int {
		if c := strings.Compare(a.app, b.app); c != 0 {
			return c
		}
		return int(a.at - b.at)
	})
	r.Memory = map[string][]resultsdb.MemoryPoint{}
	epoch := r.Run.Epoch.UnixMicro()
	type bucket struct {
		app  string
		k    float64
		t    float64
		sum  float64
		n    float64
		q    *int64
		used bool
	}
	var b bucket
	flush := func() {
		if b.used {
			r.Memory[b.app] = append(r.Memory[b.app], resultsdb.MemoryPoint{T: b.t, MeanBytes: b.sum / b.n, QuotaBytes: b.q})
		}
	}
	for _, k := range keys {
		p := polls[k]
		t := offset(k.at, epoch)
		bk := math.Floor(t / r.IntervalS)
		if !b.used || b.app != k.app || b.k != bk {
			flush()
			b = bucket{app: k.app, k: bk, t: t, used: true}
		}
		b.sum += numericAvg(&p.sum, p.n)
		b.n++
		if p.quota != nil && (b.q == nil || *p.quota > *b.q) {
			b.q = p.quota
		}
	}
	flush()
	return nil
}
