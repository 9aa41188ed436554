package metrics

import (
	"encoding/json"
	"os"
	"regexp"
	"testing"
)

// TestTheGrafanaDashboardAsksForPublishedMetrics: every cfbench_ metric the dashboard
// in docs/ queries is one this package publishes, and every one published is on it.
func TestTheGrafanaDashboardAsksForPublishedMetrics(t *testing.T) {
	b, err := os.ReadFile("../../docs/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("docs/grafana-dashboard.json: %v", err)
	}
	published := map[string]bool{}
	for _, m := range All {
		published[m.Name] = false
	}
	name := regexp.MustCompile(`\bcfbench_[a-z_]+`)
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, n := range name.FindAllString(tg.Expr, -1) {
				if _, ok := published[n]; !ok {
					t.Errorf("panel %q queries %s, which is not published", p.Title, n)
				}
				published[n] = true
			}
		}
	}
	for n, used := range published {
		if !used {
			t.Errorf("%s is published but on no panel", n)
		}
	}
}
