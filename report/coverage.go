package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// EmptyShareForQuota is the share of the missing requests that must lie in whole
// seconds without any router line for the gaps to read as a quota or dropped log
// bundles rather than as lost requests.
const EmptyShareForQuota = 0.8

// CoverageVerdict says in words how complete a step's router logs are and, when they
// are not, what the gaps look like. budgetSpent tells that the pull stopped at its
// document budget (collectors.router_logs.max_documents).
func CoverageVerdict(c resultsdb.Coverage, budgetSpent bool) string {
	missing := c.Missing()
	switch {
	case missing == 0:
		return "complete"
	case c.Found == 0 && budgetSpent:
		return "none: the document budget was spent before this step"
	case c.Found == 0:
		return "none: no router line of this step was found (wrong index, app or field mapping?)"
	}
	var v string
	switch {
	case budgetSpent:
		v = "the pull stopped at its document budget"
	case float64(c.MissingInEmpty) >= EmptyShareForQuota*float64(missing):
		v = fmt.Sprintf("quota-like: %d of %d seconds have no router line at all (log quota or dropped bundles)", c.EmptySeconds, c.Seconds)
	default:
		v = fmt.Sprintf("lost requests: the missing are scattered over %d of %d seconds", c.PartialSeconds+c.EmptySeconds, c.Seconds)
	}
	if c.NoResponse > 0 {
		v += fmt.Sprintf("; %d of the missing got no response (the router may not have seen them)", c.NoResponse)
	}
	return v
}

// CoverageTable writes one row per variant and step: requests sent, found in the router
// logs, missing, the share found, and the verdict.
func CoverageTable(w io.Writer, rows []resultsdb.Coverage, budgetSpent bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "variant\tstep\tsent\tfound\tmissing\tcoverage\tgaps")
	for _, c := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%.1f%%\t%s\n", c.Variant, c.Step+1, c.Sent, c.Found, c.Missing(), 100*c.Share(), CoverageVerdict(c, budgetSpent))
	}
	return tw.Flush()
}
