package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cf-benchmark/cf-benchmark/spec"
)

// TestPreflightNamesEveryProblemWithItsLine runs Preflight over specs that a run would
// refuse, and one it would start, and checks each problem's file:line:col: field prefix.
func TestPreflightNamesEveryProblemWithItsLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("one.yml", "applications:\n- name: one\n  memory: 64M\n")
	write("bad.yml", "applications:\n- name: bad\n  memory: lots\n")
	write("route.yml", "applications:\n- name: one\n  routes: [{route: "+strings.Repeat("h", 20)+".apps.example.com}]\n")
	const head = "version: 1\nname: pf\nvariants:\n"
	const workload = "workload:\n  model: closed\n  users: 1\n  requests:\n    - name: r\n      path: /\n"
	const withHeader = "workload:\n  model: closed\n  users: 1\n  requests:\n    - name: r\n      path: /\n      headers: {Authorization: \"${PF_TOKEN}\", X-Ok: \"${PF_SET}\"}\n"
	const ramp = "ramp: {max: 1, hold: 1s}\n"
	const landscape = "landscape:\n  org: o\n  apps: {space: a}\n  generators: {space: g}\n"
	const resultsDB = "results_db: {service_instance: r}\n"
	cases := []struct {
		name, text string
		want       []string // prefixes after "pf.yml:", one per problem; none: valid
	}{
		{"url variant in process", head + "  - {name: a, url: http://127.0.0.1:1}\n" + workload + ramp, nil},
		{"manifest on Cloud Foundry", head + "  - {name: a, manifest: one.yml}\n" + workload + ramp + landscape + resultsDB, nil},
		{"landscape without results_db", head + "  - {name: a, manifest: one.yml}\n" + workload + ramp + landscape,
			[]string{"12:1: results_db: is required with a landscape"}},
		{"manifest that does not exist", head + "  - {name: a, manifest: nope.yml}\n" + workload + ramp + landscape + resultsDB,
			[]string{"4:15: variants[0].manifest: read manifest: open "}},
		{"manifest without the app named", head + "  - {name: a, manifest: one.yml, app: two}\n" + workload + ramp + landscape + resultsDB,
			[]string{"4:15: variants[0].manifest: manifest " + filepath.Join(dir, "one.yml") + ": has no app \"two\""}},
		{"manifest with a bad field", head + "  - {name: a, manifest: bad.yml}\n" + workload + ramp + landscape + resultsDB,
			[]string{"4:15: variants[0].manifest: manifest " + filepath.Join(dir, "bad.yml") + ": app \"bad\": memory: "}},
		{"app CPU stop without Cloud Foundry", head + "  - {name: a, url: http://127.0.0.1:1}\n" + workload + "ramp: {max: 1, hold: 1s, stop: {app_cpu_above: 90}}\n",
			[]string{"11:33: ramp.stop.app_cpu_above: needs the apps' container metrics"}},
		{"header variable not set", head + "  - {name: a, url: http://127.0.0.1:1}\n" + withHeader + ramp,
			[]string{"11:17: workload.requests[0].headers.Authorization: ${PF_TOKEN} is not set"}},
		{"a matrix over a good manifest", head + "  - {name: a, manifest: one.yml}\n  - {name: m, manifest: one.yml, matrix: {env: {N: [1, 2]}, memory: [1G]}}\n" +
			workload + ramp + landscape + resultsDB, nil},
		{"a matrix over a bad manifest: its problem once", head + "  - {name: a, url: http://127.0.0.1:1}\n  - {name: m, manifest: bad.yml, matrix: {env: {N: [1, 2]}}}\n" +
			workload + ramp + landscape + resultsDB,
			[]string{"5:15: variants[1].manifest: manifest " + filepath.Join(dir, "bad.yml") + ": app \"bad\": memory: "}},
		{"a matrix whose suffix makes a route host too long", head + "  - {name: m, manifest: route.yml, matrix: {env: {N: {" + strings.Repeat("x", 50) + ": 1}}}}\n" +
			workload + ramp + landscape + resultsDB,
			[]string{"4:15: variants[0].manifest: manifest " + filepath.Join(dir, "route.yml") + ": app \"one\": routes[0].route: the host \"" +
				strings.Repeat("h", 20) + "-" + strings.Repeat("x", 50) + "\" is longer than 63 characters"}},
		{"two problems at once", head + "  - {name: a, manifest: nope.yml}\n" + withHeader + ramp + landscape,
			[]string{"13:1: results_db: ", "11:17: workload.requests[0].headers.Authorization: ", "4:15: variants[0].manifest: "}},
	}
	lookup := func(name string) (string, bool) { return "set", name == "PF_SET" }
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sp, err := spec.Parse(filepath.Join(dir, "pf.yml"), []byte(c.text), dir)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			_, err = Preflight(context.Background(), sp, lookup, nil)
			var errs spec.Errors
			if len(c.want) == 0 {
				if err != nil {
					t.Fatalf("Preflight = %v, want nil", err)
				}
				return
			}
			if !errors.As(err, &errs) || len(errs) != len(c.want) {
				t.Fatalf("Preflight = %v, want %d spec problem(s)", err, len(c.want))
			}
			for i, e := range errs {
				if want := filepath.Join(dir, "pf.yml") + ":" + c.want[i]; !strings.HasPrefix(e.Error(), want) {
					t.Errorf("problem %d = %q, want prefix %q", i+1, e.Error(), want)
				}
			}
		})
	}
}

func TestCheckIsASpecProblemAndUnsupported(t *testing.T) {
	t.Parallel()
	sp, err := spec.Parse("t.yml", []byte("version: 1\nname: c\nvariants:\n  - {name: a, url: http://127.0.0.1:1}\n"+
		"workload:\n  model: closed\n  users: 1\n  requests:\n    - {name: r, path: /}\nramp: {max: 1, hold: 1s}\n"), ".")
	if err != nil {
		t.Fatal(err)
	}
	err = Check(sp, true)
	var errs spec.Errors
	if !errors.Is(err, ErrUnsupported) || !errors.As(err, &errs) || len(errs) != 2 || errs[0].Path != "landscape" || errs[1].Path != "results_db" {
		t.Fatalf("Check(onCF) = %v, want the missing landscape and results_db as spec problems matching ErrUnsupported", err)
	}
}
