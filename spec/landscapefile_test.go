package spec

import (
	"reflect"
	"strings"
	"testing"
)

// tofuOutput is what `tofu output -json` prints for terraform/ (abridged types).
const tofuOutput = `{
  "landscape": {
    "sensitive": false,
    "type": ["object", {}],
    "value": {
      "landscape": {
        "apps": {"isolation_segment": "apps", "space": "apps"},
        "generators": {"isolation_segment": null, "space": "loadgen"},
        "org": "bench",
        "services": [{"name": "appdb", "offering": "postgres", "plan": "db"}]
      },
      "results_db": {"offering": "postgres", "plan": "db", "service_instance": "results"}
    }
  },
  "org_id": {"sensitive": false, "type": "string", "value": "0d5e"}
}
`

const specWithoutLandscape = `version: 1
name: tf
# the variants
variants:
  - {name: a, manifest: app.yml}
workload: {model: closed, requests: [{name: r, path: /}]}
ramp: {max: 2, hold: 1s}
`

func TestParseWithLandscape(t *testing.T) {
	wantL := &Landscape{Org: "bench", Apps: SpaceRef{Space: "apps", IsolationSegment: "apps"}, Generators: SpaceRef{Space: "loadgen"},
		Services: []ServiceInstance{{Name: "appdb", Offering: "postgres", Plan: "db"}}}
	for name, tc := range map[string]struct {
		text  string
		relay Relay
	}{
		"spec without a landscape": {specWithoutLandscape, RelayAuto},
		"spec with its own, replaced": {strings.Replace(specWithoutLandscape, "# the variants\n",
			"landscape: {org: other, apps: {space: x}, generators: {space: y}}\nresults_db: {service_instance: other}\n", 1), RelayAuto},
		// The spec's relay setting outlives the replacement, also in the stored text.
		"spec with its own, its relay kept": {strings.Replace(specWithoutLandscape, "# the variants\n",
			"landscape: {org: other, apps: {space: x}, generators: {space: y}}\nresults_db: {service_instance: other, relay: always}\n", 1), RelayAlways},
	} {
		text := tc.text
		wantDB := &ResultsDB{ServiceInstance: "results", Offering: "postgres", Plan: "db", Relay: tc.relay}
		t.Run(name, func(t *testing.T) {
			s, stored, err := ParseWithLandscape("b.yml", []byte(text), "dir", "out.json", []byte(tofuOutput))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(s.Landscape, wantL) || !reflect.DeepEqual(s.ResultsDB, wantDB) {
				t.Errorf("landscape %+v, results_db %+v", s.Landscape, s.ResultsDB)
			}
			// The text a run stores parses on its own to the same spec.
			again, err := Parse("b.yml", stored, "dir")
			if err != nil {
				t.Fatalf("the stored text does not parse: %v\n%s", err, stored)
			}
			if !reflect.DeepEqual(again.Landscape, wantL) || !reflect.DeepEqual(again.ResultsDB, wantDB) || again.Variants[0].Manifest != s.Variants[0].Manifest {
				t.Errorf("stored text parses to landscape %+v, results_db %+v\n%s", again.Landscape, again.ResultsDB, stored)
			}
			if !strings.Contains(string(stored), "# from the Terraform output out.json") || strings.Contains(string(stored), "other") {
				t.Errorf("stored text:\n%s", stored)
			}
		})
	}
}

func TestParseWithLandscapeErrors(t *testing.T) {
	for _, tc := range []struct{ name, spec, out, want string }{
		{"no landscape output", specWithoutLandscape, `{"org_id": {"value": "x"}}`,
			`out.json:1:1: has no output "landscape": write this file with ` + "`tofu -chdir=terraform output -json > FILE`"},
		{"a value, not an output file", specWithoutLandscape, `{"landscape": {"org": "x"}}`,
			`out.json:1:2: landscape: is not an output of "tofu output -json" (no value)`},
		{"bad field in the output", specWithoutLandscape,
			"{\"landscape\": {\"value\": {\n \"landscape\": {\"org\": \"o\", \"apps\": {\"space\": \"\"}, \"generators\": {\"space\": \"g\"}},\n \"results_db\": {\"service_instance\": \"r\"}}}}",
			`out.json:2:37: landscape.value.landscape.apps.space: must not be empty`},
		{"errors of both files", strings.Replace(specWithoutLandscape, "max: 2", "max: -2", 1), `{}`,
			"b.yml:7:8: ramp.max: must be a positive integer"},
		{"not JSON", specWithoutLandscape, `{"landscape": `, "out.json:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ParseWithLandscape("b.yml", []byte(tc.spec), "dir", "out.json", []byte(tc.out))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}
