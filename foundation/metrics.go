package foundation

import (
	"strconv"

	"github.com/cf-benchmark/cf-benchmark/foundation/cells"
	"github.com/cf-benchmark/cf-benchmark/foundation/logcache"
)

// cpuWaitGauge is the counters envelope's gauge of an instance's cumulative run-queue
// wait, in nanoseconds.
const cpuWaitGauge = "absolute_cpu_wait"

// containerEnvelopes turns the cells' container metrics into the gauge envelopes
// Diego's rep sends Log Cache: per instance one with cpu, memory, disk and their
// quotas, and a separate one with the cumulative counters container_age,
// absolute_usage and absolute_entitlement and the cpu_entitlement rate
// (diego-logging-client SendAppMetrics: Loggregator v1 subscribers would lose the
// counters in a combined one). The rep's Loggregator client stamps each envelope as
// it sends it, so no two share a time; the cells sample every instance at one time,
// so the envelopes here are stamped at it plus 0, 1, 2, … ns in order, the counters
// after their usage: a reader paging on timestamps (go-log-cache's Walk goes on from
// the last one seen plus a nanosecond) misses none. Both rates (cpu, cpu_entitlement)
// are over the last interval. The source is the app's guid, the instance id its
// index, and the tags the ones Cloud Controller gives Diego for them. The counters
// envelope also carries absolute_cpu_wait, the instance's run-queue wait in ns
// (cells.ContainerMetrics.CPUWait), where the kernel keeps it: the local foundation's
// own gauge, which Diego does not send.
func containerEnvelopes(ms []cells.ContainerMetrics) []logcache.Envelope {
	out := make([]logcache.Envelope, 0, 2*len(ms))
	for i, m := range ms {
		index := strconv.Itoa(m.Index)
		counters := map[string]logcache.GaugeValue{
			"container_age":        {Unit: "nanoseconds", Value: float64(m.Age)},
			"cpu_entitlement":      {Unit: "percentage", Value: 100 * m.CPUEntitlement},
			"absolute_usage":       {Unit: "nanoseconds", Value: float64(m.CPUTime)},
			"absolute_entitlement": {Unit: "nanoseconds", Value: float64(m.Entitlement)},
		}
		if m.CPUWait != nil {
			counters[cpuWaitGauge] = logcache.GaugeValue{Unit: "nanoseconds", Value: float64(*m.CPUWait)}
		}
		tags := map[string]string{"source_id": m.AppGUID, "instance_id": index, "app_id": m.AppGUID, "app_name": m.AppName,
			"process_id": m.ProcessGUID, "process_type": m.ProcessType, "process_instance_id": m.InstanceGUID, "origin": "rep"}
		ts := m.Time.UnixNano() + 2*int64(i)
		out = append(out,
			logcache.Envelope{Timestamp: ts, SourceID: m.AppGUID, InstanceID: index, Tags: tags, Gauge: map[string]logcache.GaugeValue{
				"cpu":          {Unit: "percentage", Value: 100 * m.CPU},
				"memory":       {Unit: "bytes", Value: float64(m.MemBytes)},
				"disk":         {Unit: "bytes", Value: float64(m.DiskBytes)},
				"memory_quota": {Unit: "bytes", Value: float64(m.MemQuotaBytes)},
				"disk_quota":   {Unit: "bytes", Value: float64(m.DiskQuotaBytes)},
			}},
			logcache.Envelope{Timestamp: ts + 1, SourceID: m.AppGUID, InstanceID: index, Tags: tags, Gauge: counters})
	}
	return out
}
