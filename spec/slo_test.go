package spec

import (
	"reflect"
	"testing"
	"time"
)

func TestParseSLO(t *testing.T) {
	t.Parallel()
	rate, cpu := 0.0, 1.0
	tests := []struct {
		name, yaml string
		want       *SLO
	}{
		{"absent", "", nil},
		{"null is absent", "slo:\n", nil},
		{"latency only", "slo: {latency: p999, max_latency: 250ms}\n", &SLO{Latency: StatP999, MaxLatency: 250 * time.Millisecond}},
		{"every bound, no errors allowed", "slo:\n  latency: mean\n  max_latency: 8ms\n  max_error_rate: 0\n  max_app_cpu_cores: 1\n",
			&SLO{Latency: StatMean, MaxLatency: 8 * time.Millisecond, MaxErrorRate: &rate, MaxAppCPUCores: &cpu}},
		{"CPU only", "slo: {max_app_cpu_cores: 1}\n", &SLO{MaxAppCPUCores: &cpu}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse("spec.yml", []byte(minimal+tt.yaml), ".")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(s.SLO, tt.want) {
				t.Errorf("SLO = %+v, want %+v", s.SLO, tt.want)
			}
		})
	}
}
