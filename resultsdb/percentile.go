package resultsdb

import (
	"fmt"
	"strconv"
	"strings"
)

// Percentiles are exact observed values, percentile_disc's, computed in the way each
// kind of store runs best. One server sorts each group's values (percentile_disc
// itself). A Citus cluster would pull every row to the coordinator for an ordered-set
// aggregate, so there the rows are counted per (group, value) with a plain GROUP BY,
// which the workers aggregate, and only those counts reach the coordinator, which picks
// the percentiles from them. Counting on one server cost more than percentile_disc
// where the values are mostly distinct (µs latencies per second: 0.21 s against 0.92 s
// for a million rows), so each store keeps its own; TestPercentilesAreThoseOfPercentileDisc
// and TestCitusGivesTheSameReport hold them to the same figures.

// dialect is the SQL a results database takes for percentiles.
type dialect int

const (
	onePostgres dialect = iota // percentile_disc
	citusSQL                   // counting values
)

// A column is an expression over the rows and the name the query gives it.
type column struct{ expr, name string }

// A fraction is a percentile to compute, p in [0, 1], and the name of its column.
type fraction struct {
	name string
	p    float64
}

// percentilesSQL is a query of the percentiles of value over the rows of from (a FROM
// clause, with its WHERE) per group: a row per group with rows, its groups' columns
// and then one column per fraction, of value's type, each exactly what
// percentile_disc(p) WITHIN GROUP (ORDER BY value) gives: the value at 1-based position
// max(1, ceil(p·N)) of the group's N sorted values, p·N in float8. It counts the rows
// per group and value with a plain GROUP BY, and picks each fraction's value from the
// running sum of those counts: the smallest value whose running count reaches that
// position. value must not be NULL (percentile_disc would skip such rows), and no value
// of a group occur more than 2³¹-1 times (an error). It is for citusSQL; on one server
// the queries call percentile_disc in place.
func percentilesSQL(from string, groups []column, value string, fractions ...fraction) string {
	exprs, names, ordinals := groupBy(groups)
	ordinals += ", " + strconv.Itoa(len(groups)+1)
	var picks strings.Builder
	for _, f := range fractions {
		p := strconv.FormatFloat(f.p, 'g', -1, 64)
		fmt.Fprintf(&picks, ",\n       min(v) FILTER (WHERE cum >= greatest(ceil(%s::float8 * n::float8)::bigint, 1)) AS %s", p, f.name)
	}
	// The counts are ints: the sum of ints is a bigint, of bigints a slower numeric. The
	// values of a group are distinct, so the running sum needs no peers (ROWS: faster).
	return `SELECT ` + names + picks.String() + `
FROM (SELECT ` + names + `, v, sum(c) OVER (PARTITION BY ` + names + ` ORDER BY v ROWS UNBOUNDED PRECEDING) AS cum,
             sum(c) OVER (PARTITION BY ` + names + `) AS n
      FROM (SELECT ` + exprs + `, ` + value + ` AS v, count(*)::int AS c
            ` + indent(from, "            ") + `
            GROUP BY ` + ordinals + `) counted) running
GROUP BY ` + names
}

// groupBy is what a query grouped by groups lists: their expressions named, their
// names, and their ordinals (for GROUP BY: a name there would mean an input column of
// that name where there is one).
func groupBy(groups []column) (exprs, names, ordinals string) {
	var e, n, o []string
	for i, g := range groups {
		e = append(e, g.expr+" AS "+g.name)
		n = append(n, g.name)
		o = append(o, strconv.Itoa(i+1))
	}
	return strings.Join(e, ", "), strings.Join(n, ", "), strings.Join(o, ", ")
}

// indent gives the lines of sql after the first the prefix as their indentation, so
// that a clause nested in generated SQL reads as nested.
func indent(sql, prefix string) string {
	lines := strings.Split(sql, "\n")
	for i := 1; i < len(lines); i++ {
		lines[i] = prefix + strings.TrimLeft(lines[i], " \t")
	}
	return strings.Join(lines, "\n")
}
