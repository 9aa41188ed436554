package spec

import (
	"strings"
	"testing"
)

// TestInstanceEventsLevel: checks.instance_events is warn by default, set alone or as
// a mapping with its level, and may not fail the run (an instance the platform restarted
// leaves the samples true).
func TestInstanceEventsLevel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		checks string
		want   CheckLevel
		err    string
	}{
		{"", CheckWarn, ""},
		{"checks: {instance_events: off}\n", CheckOff, ""},
		{"checks: {instance_events: {level: warn}}\n", CheckWarn, ""},
		{"checks: {instance_events: fail}\n", "", "instance_events"},
	} {
		s, err := Parse("spec.yml", []byte(minimal+tc.checks), "")
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err %v, want one naming %s", tc.checks, err, tc.err)
			}
			continue
		}
		if err != nil || s.Checks.InstanceEvents != tc.want {
			t.Errorf("%q: %v, %v; want %s", tc.checks, s, err, tc.want)
		}
	}
}
