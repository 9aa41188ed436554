package platform

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cf-benchmark/cf-benchmark/foundation/testfoundation"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// TestEnsureLandscape runs against a local foundation, which starts with org cfbench and
// spaces apps and loadgen on isolation segments of the same names.
func TestEnsureLandscape(t *testing.T) {
	_, cl := testfoundation.Start(t)
	ctx := context.Background()
	ref := func(space, seg string) spec.SpaceRef { return spec.SpaceRef{Space: space, IsolationSegment: seg} }
	cases := []struct {
		name    string
		want    spec.Landscape
		err     string // substring of the error, "" for success
		changes int
		warn    bool
	}{
		{"as it is", spec.Landscape{Org: "cfbench", Apps: ref("apps", "apps"), Generators: ref("loadgen", "loadgen")}, "", 0, false},
		{"segments left to the spaces", spec.Landscape{Org: "cfbench", Apps: ref("apps", ""), Generators: ref("loadgen", "")}, "", 0, false},
		{"unknown org", spec.Landscape{Org: "nope", Apps: ref("apps", ""), Generators: ref("loadgen", "")}, `org "nope" not found`, 0, false},
		{"missing space", spec.Landscape{Org: "cfbench", Apps: ref("bench-apps", ""), Generators: ref("loadgen", "")},
			"Try: cf create-space bench-apps -o cfbench", 0, false},
		{"wrong segment", spec.Landscape{Org: "cfbench", Apps: ref("apps", "loadgen"), Generators: ref("loadgen", "loadgen")},
			"Try: cf set-space-isolation-segment apps loadgen", 0, false},
		{"missing segment", spec.Landscape{Org: "cfbench", Apps: ref("apps", "fast"), Generators: ref("loadgen", "loadgen")},
			"cf create-isolation-segment fast", 0, false},
		{"create what is missing", spec.Landscape{Org: "cfbench", Apps: ref("bench-apps", "fast"), Generators: ref("bench-gen", "loadgen"), CreateMissing: true},
			"", 6, false}, // 2 spaces, 1 segment, 1 entitlement, 2 assignments
		{"same segment", spec.Landscape{Org: "cfbench", Apps: ref("apps", "apps"), Generators: ref("bench-gen", "apps"), CreateMissing: true},
			"", 1, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, err := EnsureLandscape(ctx, cl, &c.want)
			if c.err != "" {
				if !errors.Is(err, ErrLandscape) || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want ErrLandscape saying %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Changes) != c.changes || (len(l.Warnings) > 0) != c.warn {
				t.Fatalf("changes %q, warnings %q", l.Changes, l.Warnings)
			}
			if c.want.Apps.IsolationSegment != "" && l.Apps.IsolationSegment != c.want.Apps.IsolationSegment {
				t.Fatalf("apps space on %q", l.Apps.IsolationSegment)
			}
			// A second pass finds everything in place.
			again, err := EnsureLandscape(ctx, cl, &c.want)
			if err != nil || len(again.Changes) != 0 {
				t.Fatalf("second pass: changes %q, %v", again.Changes, err)
			}
		})
	}
}
