package spec

import (
	"fmt"
	"sort"
	"strings"
)

// Error is one problem in a spec. Line and Column are 1-based; Column is 0 for YAML
// syntax errors, whose parser gives no column. Path is the field path such as
// "workload.requests[1].weight", "" for the file as a whole.
type Error struct {
	File         string
	Line, Column int
	Path         string
	Msg          string
}

// Error formats e as "file:line:column: path: msg", leaving out what is unknown.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Column > 0 {
			fmt.Fprintf(&b, ":%d", e.Column)
		}
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// position is a line and column in a spec file, both 1-based.
type position struct{ line, col int }

// Errorf returns a problem with field path of s (as in Error.Path, e.g.
// "variants[1].manifest"), placed where the spec file has that field or, when it has
// not, its nearest enclosing field it has. It is for rules checked after parsing (files
// a spec names, the environment), so that they read like the parser's own problems.
func (s *Spec) Errorf(path, format string, args ...any) *Error {
	e := &Error{File: s.File, Path: path, Msg: fmt.Sprintf(format, args...)}
	for at := path; ; at = parent(at) {
		if p, ok := s.pos[at]; ok {
			e.Line, e.Column = p.line, p.col
			return e
		}
		if at == "" {
			return e
		}
	}
}

// parent is the path of the field that holds path: "a.b[2]" for "a.b[2].c", "a.b" for
// "a.b[2]", "" for "a".
func parent(path string) string {
	if i := strings.LastIndexAny(path, ".["); i >= 0 {
		return path[:i]
	}
	return ""
}

// Errors is every problem found in one spec, sorted by position. Parse and Load return
// it as their error; get it back with errors.As.
type Errors []*Error

// MaxShown is how many problems a spec's errors print: a large broken file (a wrong
// file given as the spec, say) must not flood the terminal.
const MaxShown = 50

// Shown is the problems to print, at most MaxShown, and how many more there are.
func (es Errors) Shown() (shown Errors, more int) {
	if len(es) <= MaxShown {
		return es, 0
	}
	return es[:MaxShown], len(es) - MaxShown
}

// Error joins the problems, one per line, at most MaxShown, then how many more.
func (es Errors) Error() string {
	shown, more := es.Shown()
	lines := make([]string, len(shown), len(shown)+1)
	for i, e := range shown {
		lines[i] = e.Error()
	}
	if more > 0 {
		lines = append(lines, fmt.Sprintf("… and %d more problem(s)", more))
	}
	return strings.Join(lines, "\n")
}

// sorted orders es by position and drops exact duplicates, which appear when an
// anchored node is reached through several aliases.
func (es Errors) sorted() Errors {
	sort.SliceStable(es, func(i, j int) bool {
		if es[i].Line != es[j].Line {
			return es[i].Line < es[j].Line
		}
		return es[i].Column < es[j].Column
	})
	seen := make(map[Error]bool, len(es))
	out := es[:0]
	for _, e := range es {
		if !seen[*e] {
			seen[*e] = true
			out = append(out, e)
		}
	}
	return out
}
