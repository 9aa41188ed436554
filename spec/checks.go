package spec

import (
	"time"

	"gopkg.in/yaml.v3"
)

// CheckLevel is what a sanity check does when it trips.
type CheckLevel string

// The check levels.
const (
	CheckFail CheckLevel = "fail"
	CheckWarn CheckLevel = "warn"
	CheckOff  CheckLevel = "off"
)

// Checks are the checks a run performs on its own measurement: each a documented rule
// judged on evidence, with its thresholds here (docs/checks.md has the rules). A clean
// run trips none. Every check but colocation may only warn: the samples stay true, only
// what limited them is in doubt.
type Checks struct {
	// Colocation trips when a generator shares a host with an app instance.
	Colocation CheckLevel
	// GeneratorSaturation trips when the generators are the bottleneck themselves.
	GeneratorSaturation GeneratorSaturation
	// Plateau trips when more load bought little throughput while the app idled.
	Plateau Plateau
	// PoolExhaustion trips when the apps wait for database connections.
	PoolExhaustion PoolExhaustion
	// Contention trips when the app waited for a CPU that others on its cell took.
	Contention Contention
	// Stall trips when the target answered (almost) nothing for a while.
	Stall Stall
	// Coverage trips when the router logs miss requests of a step.
	Coverage Coverage
	// LayerOrder trips when a request's client, router and app times contradict each
	// other (a layer took longer than the one around it).
	LayerOrder LayerOrder
	// Neighbours trips when apps that are not part of the run use CPU on the
	// foundation, before the run or in a step.
	Neighbours Neighbours
	// InstanceEvents trips when an instance of an app the run pushed (an app under
	// test, a generator, the tunnel, the relay) crashed, was killed for memory,
	// restarted or moved during a step (instance_crashed, instance_oom,
	// instance_restarted, instance_moved).
	InstanceEvents CheckLevel
}

// Neighbours judges the apps beside the run's own: of the run's org on Cloud Foundry,
// every app on the local foundation's cells. It trips when, together, those that used
// at least CPUAbove cores each used it; apps named in Except (part of the system under
// test though the run did not push them, e.g. a proxy's upstream) are left out.
type Neighbours struct {
	Level    CheckLevel
	CPUAbove float64
	Except   []string
}

// GeneratorSaturation judges the generators by their own signal: the send lag (how late
// requests went out against when they were due), and their CPU against the cores they
// can get where those are known.
type GeneratorSaturation struct {
	Level CheckLevel
	// SendLagShare and SendLagMin: trips when the mean send lag is at least this share
	// of the mean latency and at least this long.
	SendLagShare float64
	SendLagMin   time.Duration
	// CPUShare: trips when the generator instances used together at least this share
	// of the cores of the cells they ran on (known on the local foundation).
	CPUShare float64
}

// Plateau judges a step that added load: trips when the throughput grew by less than
// ServedBelow of the load's growth (0.25: a quarter of it) while the app's mean CPU per
// instance stayed under AppCPUBelow cores (instances with less than a core each, sharing
// a cell: under AppCPUBelow of the cores available to them). The limit is then outside the app (a proxy,
// the router, a pool, the network).
type Plateau struct {
	Level       CheckLevel
	ServedBelow float64
	AppCPUBelow float64
	// LoadGrowthMin is the least growth of offered load (0.1: +10 %) worth judging.
	LoadGrowthMin float64
}

// PoolExhaustion trips when, in a step's app timings, the apps spent at least WaitShare
// of their time waiting for a database connection and at least MinWait on average (a
// fast app's sub-millisecond waits for a connection being opened are no queue), or when
// the apps' database server (where the run can reach it) had at least ConnectionsShare
// of its max_connections in use.
type PoolExhaustion struct {
	Level            CheckLevel
	WaitShare        float64
	MinWait          time.Duration
	ConnectionsShare float64
}

// Contention judges the app's run-queue wait (where the platform counts it): trips when
// its threads waited for a CPU at least WaitShare of the time they were ready to run and
// at least WaitedCores cores' worth per instance, while its instances together used less
// than CPUShare of the cores of their cell. Its cell's neighbours or the host took the
// CPU (a work-conserving scheduler idles no CPU a ready thread may use).
type Contention struct {
	Level       CheckLevel
	WaitShare   float64
	WaitedCores float64
	CPUShare    float64
}

// Stall trips when the target completed (almost) nothing for at least Longest, or, in a
// closed loop, when the requests not sent during stalls reach OmittedShare of the step.
type Stall struct {
	Level        CheckLevel
	Longest      time.Duration
	OmittedShare float64
}

// Coverage trips when a step's router logs hold less than Below of its requests.
type Coverage struct {
	Level CheckLevel
	Below float64
}

// LayerOrder trips when more than Above of a step's requests have layers out of order:
// app time over router time, or router time over client time.
type LayerOrder struct {
	Level CheckLevel
	Above float64
}

// DefaultChecks are the checks of a spec that says nothing about them.
func DefaultChecks() Checks {
	return Checks{
		Colocation:          CheckFail,
		GeneratorSaturation: GeneratorSaturation{Level: CheckWarn, SendLagShare: 0.1, SendLagMin: 500 * time.Microsecond, CPUShare: 0.9},
		Plateau:             Plateau{Level: CheckWarn, ServedBelow: 0.25, AppCPUBelow: 0.5, LoadGrowthMin: 0.1},
		PoolExhaustion:      PoolExhaustion{Level: CheckWarn, WaitShare: 0.2, MinWait: time.Millisecond, ConnectionsShare: 0.9},
		Contention:          Contention{Level: CheckWarn, WaitShare: 0.5, WaitedCores: 0.5, CPUShare: 0.8},
		Stall:               Stall{Level: CheckWarn, Longest: time.Second, OmittedShare: 0.01},
		Coverage:            Coverage{Level: CheckWarn, Below: 0.99},
		LayerOrder:          LayerOrder{Level: CheckWarn, Above: 0.001},
		Neighbours:          Neighbours{Level: CheckWarn, CPUAbove: 0.1},
		InstanceEvents:      CheckWarn,
	}
}

func (d *decoder) checks(c *Checks) func(value) {
	return func(v value) {
		share := func(dst *float64) func(value) {
			return d.number(dst, func(x float64) bool { return x > 0 && x <= 1 }, "a fraction greater than 0 and at most 1")
		}
		warn := []CheckLevel{CheckWarn, CheckOff}
		d.object(v,
			optional("colocation", enum(d, &c.Colocation, CheckFail, CheckWarn, CheckOff)),
			optional("generator_saturation", d.check(&c.GeneratorSaturation.Level, warn,
				optional("send_lag_share", share(&c.GeneratorSaturation.SendLagShare)),
				optional("send_lag_min", d.duration(&c.GeneratorSaturation.SendLagMin, 0)),
				optional("cpu_share", share(&c.GeneratorSaturation.CPUShare)))),
			optional("plateau", d.check(&c.Plateau.Level, warn,
				optional("served_below", share(&c.Plateau.ServedBelow)),
				optional("app_cpu_below", d.number(&c.Plateau.AppCPUBelow, func(x float64) bool { return x > 0 }, "cores greater than 0 (1 = one core)")),
				optional("load_growth_min", share(&c.Plateau.LoadGrowthMin)))),
			optional("pool_exhaustion", d.check(&c.PoolExhaustion.Level, warn,
				optional("wait_share", share(&c.PoolExhaustion.WaitShare)),
				optional("min_wait", d.duration(&c.PoolExhaustion.MinWait, 0)),
				optional("connections_share", share(&c.PoolExhaustion.ConnectionsShare)))),
			optional("contention", d.check(&c.Contention.Level, warn,
				optional("wait_share", share(&c.Contention.WaitShare)),
				optional("waited_cores", d.number(&c.Contention.WaitedCores, func(x float64) bool { return x > 0 }, "cores greater than 0 (1 = one core)")),
				optional("cpu_share", share(&c.Contention.CPUShare)))),
			optional("stall", d.check(&c.Stall.Level, warn,
				optional("longest", d.duration(&c.Stall.Longest, positive)),
				optional("omitted_share", share(&c.Stall.OmittedShare)))),
			optional("coverage", d.check(&c.Coverage.Level, warn,
				optional("below", share(&c.Coverage.Below)))),
			optional("layer_order", d.check(&c.LayerOrder.Level, warn,
				optional("above", share(&c.LayerOrder.Above)))),
			optional("neighbours", d.check(&c.Neighbours.Level, warn,
				optional("cpu_above", d.number(&c.Neighbours.CPUAbove, func(x float64) bool { return x > 0 }, "cores greater than 0 (1 = one core)")),
				optional("except", d.names(&c.Neighbours.Except)))),
			optional("instance_events", d.check(&c.InstanceEvents, warn)),
			optional("generator_cpu", d.renamed("generator_saturation")),
			optional("flat_throughput", d.renamed("plateau")),
		)
	}
}

// check decodes a check: its level alone ("warn"), or a mapping with level and the
// check's thresholds.
func (d *decoder) check(level *CheckLevel, levels []CheckLevel, thresholds ...field) func(value) {
	return func(v value) {
		if v.node.Kind == yaml.ScalarNode {
			enum(d, level, levels...)(v)
			return
		}
		d.object(v, append([]field{optional("level", enum(d, level, levels...))}, thresholds...)...)
	}
}

// renamed refuses a field that was renamed, saying its new name.
func (d *decoder) renamed(to string) func(value) {
	return func(v value) {
		d.errorf(v, "was renamed to %s (its rule changed: see docs/checks.md)", to)
	}
}
