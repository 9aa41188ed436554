package clisuite

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
)

// specReport is the part of a Ginkgo v2 JSON report's spec (types.SpecReport) read here.
type specReport struct {
	ContainerHierarchyTexts []string
	LeafNodeType            string
	LeafNodeText            string
	LeafNodeLocation        struct{ FileName string }
	State                   string
	Failure                 struct {
		Message  string
		Location struct {
			FileName   string
			LineNumber int
		}
	}
}

// suiteReport is one suite of a Ginkgo JSON report.
type suiteReport struct {
	SuitePath   string
	SpecReports []specReport
}

func (s specReport) fullText() string {
	return strings.Join(append(slices.Clone(s.ContainerHierarchyTexts), s.LeafNodeText), " ")
}

// FileCount is what happened to the specs of one file.
type FileCount struct {
	Suite, File string
	// Passed + Failed are the specs run; Excluded were left out by exclude.txt; Skipped
	// skipped themselves (e.g. "CF_INT_OIDC_USERNAME is not set", an API version).
	Passed, Failed, Excluded, Skipped int
}

// Run is the number of specs that ran.
func (c FileCount) Run() int { return c.Passed + c.Failed }

// Failure is a spec that failed, or a suite-level node (BeforeSuite...) that did.
type Failure struct {
	Suite string `json:"suite"`
	File  string `json:"file"`
	Spec  string `json:"spec"`
	// Message is the first line of Ginkgo's failure message; Where the failing line.
	Message string `json:"message"`
	Where   string `json:"where"`
}

// Summary is the outcome of a selection.
type Summary struct {
	Files    []FileCount
	Failures []Failure
	// ByReason counts the excluded specs per reason of exclude.txt.
	ByReason map[string]int
}

// Totals adds up the files of suite ("" for all).
func (s Summary) Totals(suite string) FileCount {
	t := FileCount{Suite: suite}
	for _, f := range s.Files {
		if suite == "" || f.Suite == suite {
			t.Passed += f.Passed
			t.Failed += f.Failed
			t.Excluded += f.Excluded
			t.Skipped += f.Skipped
		}
	}
	return t
}

// readReport reads a Ginkgo JSON report (--json-report), an array of suites.
func readReport(file string) ([]suiteReport, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var out []suiteReport
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("%s: not a Ginkgo JSON report: %w", file, err)
	}
	return out, nil
}

// add counts the specs of suite's selected files in reports into s.
func (s *Summary) add(suite Suite, reports []suiteReport, excl []Exclusion) {
	counts := map[string]*FileCount{}
	for _, f := range suite.Files {
		counts[f] = &FileCount{Suite: suite.Name, File: f}
	}
	if s.ByReason == nil {
		s.ByReason = map[string]int{}
	}
	for _, r := range reports {
		for _, sp := range r.SpecReports {
			file := path.Base(sp.LeafNodeLocation.FileName)
			c := counts[file]
			if sp.LeafNodeType != "It" {
				// A suite node failing (SynchronizedBeforeSuite...) fails every spec
				// behind it: report it, whichever file it is in.
				if failed(sp.State) {
					s.Failures = append(s.Failures, failure(suite.Name, file, sp))
				}
				continue
			}
			if c == nil {
				continue // a file not selected
			}
			switch {
			case sp.State == "passed":
				c.Passed++
			case failed(sp.State):
				c.Failed++
				s.Failures = append(s.Failures, failure(suite.Name, file, sp))
			case sp.State == "skipped" || sp.State == "pending":
				if i := slices.IndexFunc(excl, func(e Exclusion) bool { return e.Pattern.MatchString(sp.fullText()) }); i >= 0 {
					c.Excluded++
					s.ByReason[excl[i].Reason]++
				} else {
					c.Skipped++
				}
			}
		}
	}
	for _, f := range suite.Files {
		s.Files = append(s.Files, *counts[f])
	}
}

func failed(state string) bool {
	switch state {
	case "failed", "panicked", "interrupted", "aborted", "timedout":
		return true
	}
	return false
}

func failure(suite, file string, sp specReport) Failure {
	msg, _, _ := strings.Cut(strings.TrimSpace(sp.Failure.Message), "\n")
	text := sp.fullText()
	if sp.LeafNodeType != "It" {
		text = "[" + sp.LeafNodeType + "] " + text
	}
	return Failure{Suite: suite, File: file, Spec: strings.TrimSpace(text), Message: msg,
		Where: fmt.Sprintf("%s:%d", path.Base(sp.Failure.Location.FileName), sp.Failure.Location.LineNumber)}
}

// WriteText prints the table of files, the totals per suite and overall, and the
// failures.
func (s Summary) WriteText(w io.Writer) {
	fmt.Fprintf(w, "%-9s %-46s %6s %4s %8s %7s\n", "suite", "file", "passed", "run", "excluded", "skipped")
	line := func(suite, file string, c FileCount) {
		fmt.Fprintf(w, "%-9s %-46s %6d %4d %8d %7d\n", suite, file, c.Passed, c.Run(), c.Excluded, c.Skipped)
	}
	var suites []string
	for _, f := range s.Files {
		line(f.Suite, f.File, f)
		if !slices.Contains(suites, f.Suite) {
			suites = append(suites, f.Suite)
		}
	}
	fmt.Fprintln(w)
	for _, suite := range suites {
		line(suite, "(all files)", s.Totals(suite))
	}
	t := s.Totals("")
	line("total", "", t)
	if t.Run() > 0 {
		fmt.Fprintf(w, "\n%d of %d specs run passed (%.1f%%); %d excluded by exclude.txt, %d skipped by the specs themselves\n",
			t.Passed, t.Run(), 100*float64(t.Passed)/float64(t.Run()), t.Excluded, t.Skipped)
	}
	if len(s.Failures) > 0 {
		fmt.Fprintf(w, "\nFailures:\n")
		for _, f := range s.Failures {
			fmt.Fprintf(w, "  %s/%s: %s\n      %s (%s)\n", f.Suite, f.File, f.Spec, f.Message, f.Where)
		}
	}
}

// WriteJSON writes the summary for machines: per file and per suite counts, totals,
// failures and exclusions by reason.
func (s Summary) WriteJSON(w io.Writer) error {
	type counts struct {
		Suite    string `json:"suite"`
		File     string `json:"file,omitempty"`
		Passed   int    `json:"passed"`
		Run      int    `json:"run"`
		Failed   int    `json:"failed"`
		Excluded int    `json:"excluded"`
		Skipped  int    `json:"skipped"`
	}
	conv := func(c FileCount) counts {
		return counts{c.Suite, c.File, c.Passed, c.Run(), c.Failed, c.Excluded, c.Skipped}
	}
	out := struct {
		Files    []counts       `json:"files"`
		Suites   []counts       `json:"suites"`
		Total    counts         `json:"total"`
		Failures []Failure      `json:"failures"`
		Excluded map[string]int `json:"excluded_by_reason"`
	}{Total: conv(s.Totals("")), Failures: s.Failures, Excluded: s.ByReason}
	out.Total.Suite = "total"
	seen := map[string]bool{}
	for _, f := range s.Files {
		out.Files = append(out.Files, conv(f))
		if !seen[f.Suite] {
			seen[f.Suite] = true
			out.Suites = append(out.Suites, conv(s.Totals(f.Suite)))
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
