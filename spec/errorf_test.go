package spec

import "testing"

func TestErrorfPlacesAProblemAtItsFieldOrTheNearestEnclosingOne(t *testing.T) {
	t.Parallel()
	const text = `version: 1
name: pos
variants:
  - name: a
    url: http://127.0.0.1:1
  - name: b
    url: http://127.0.0.1:2
workload:
  model: closed
  users: 1
  requests:
    - name: r
      path: /
      headers:
        X-Token: "${T}"
ramp: {max: 1, hold: 1s}
`
	sp, err := Parse("pos.yml", []byte(text), ".")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ path, want string }{
		{"variants[1].url", "pos.yml:7:5: variants[1].url: p"},
		{"variants[1].manifest", "pos.yml:6:5: variants[1].manifest: p"}, // absent: the variant
		{"workload.requests[0].headers.X-Token", "pos.yml:15:9: workload.requests[0].headers.X-Token: p"},
		{"ramp.stop.p99_above", "pos.yml:16:1: ramp.stop.p99_above: p"}, // absent: ramp
		{"results_db", "pos.yml:1:1: results_db: p"},                    // absent: the file
	}
	for _, c := range cases {
		if got := sp.Errorf(c.path, "p").Error(); got != c.want {
			t.Errorf("Errorf(%q) = %q, want %q", c.path, got, c.want)
		}
	}
	if got := (&Spec{File: "code.yml"}).Errorf("ramp.hold", "p").Error(); got != "code.yml: ramp.hold: p" {
		t.Errorf("Errorf on a spec built in code = %q", got)
	}
}
