package report

import (
	"bytes"
	"testing"

	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

func TestCoverageVerdict(t *testing.T) {
	cases := []struct {
		name   string
		c      resultsdb.Coverage
		budget bool
		want   string
	}{
		{"complete", resultsdb.Coverage{Sent: 100, Found: 100, Seconds: 10}, false, "complete"},
		{"nothing found", resultsdb.Coverage{Sent: 100, Seconds: 10, EmptySeconds: 10, MissingInEmpty: 100}, false,
			"none: no router line of this step was found (wrong index, app or field mapping?)"},
		{"nothing found, budget spent", resultsdb.Coverage{Sent: 100, Seconds: 10, EmptySeconds: 10, MissingInEmpty: 100}, true,
			"none: the document budget was spent before this step"},
		{"whole seconds missing", resultsdb.Coverage{Sent: 1000, Found: 500, Seconds: 10, EmptySeconds: 5, MissingInEmpty: 500}, false,
			"quota-like: 5 of 10 seconds have no router line at all (log quota or dropped bundles)"},
		{"exactly at the quota share", resultsdb.Coverage{Sent: 1000, Found: 900, Seconds: 10, EmptySeconds: 1, PartialSeconds: 2, MissingInEmpty: 80}, false,
			"quota-like: 1 of 10 seconds have no router line at all (log quota or dropped bundles)"},
		{"scattered", resultsdb.Coverage{Sent: 1000, Found: 900, NoResponse: 10, Seconds: 10, PartialSeconds: 10}, false,
			"lost requests: the missing are scattered over 10 of 10 seconds; 10 of the missing got no response (the router may not have seen them)"},
		{"budget", resultsdb.Coverage{Sent: 1000, Found: 250, Seconds: 10, EmptySeconds: 7, PartialSeconds: 1, MissingInEmpty: 700}, true,
			"the pull stopped at its document budget"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := CoverageVerdict(c.c, c.budget); got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

func TestCoverageTable(t *testing.T) {
	var b bytes.Buffer
	rows := []resultsdb.Coverage{
		{Variant: "java", Step: 0, Sent: 200000, Found: 50000, Seconds: 60, EmptySeconds: 45, MissingInEmpty: 150000},
		{Variant: "node", Step: 1, Sent: 1200, Found: 1200, Seconds: 60},
	}
	if err := CoverageTable(&b, rows, true); err != nil {
		t.Fatal(err)
	}
	golden(t, "coverage.txt", b.Bytes())
}
