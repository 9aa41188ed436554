package command

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// The user's documentation (README.md and docs/*.md, from the repository's root) is
// checked against what exists: every relative link against the files and headings it
// points to, and every invocation of a command of ours against Commands, the one place
// that defines each command and its flags.
const docsRoot = "../.."

// docPages are the pages checked, by path from the repository's root.
func docPages(t *testing.T) map[string]string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(docsRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages := map[string]string{}
	for _, name := range append(names, filepath.Join(docsRoot, "README.md")) {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		rel, err := filepath.Rel(docsRoot, name)
		if err != nil {
			t.Fatal(err)
		}
		pages[filepath.ToSlash(rel)] = string(b)
	}
	if _, ok := pages["docs/running.md"]; !ok {
		t.Fatalf("no docs/running.md under %s: the pages were not found", docsRoot)
	}
	return pages
}

// TestTheDocsLinkOnlyToFilesAndHeadingsThatExist: a relative link of a page (the
// README's to the docs pages, the pages' to each other and to images) names a file
// that exists and, after a #, a heading of that page.
func TestTheDocsLinkOnlyToFilesAndHeadingsThatExist(t *testing.T) {
	for page, text := range docPages(t) {
		for _, problem := range staleLinks(page, text, readRepoFile) {
			t.Error(problem)
		}
	}
}

// TestTheDocsNameOnlyCommandsAndFlagsThatExist: every `cf NAME` with benchmark in NAME
// and every `cf-benchmark NAME` in the pages is a command of ours, and every flag
// after it on the same line one of its flags (staleInvocations says what counts).
func TestTheDocsNameOnlyCommandsAndFlagsThatExist(t *testing.T) {
	for page, text := range docPages(t) {
		for _, problem := range staleInvocations(page, text) {
			t.Error(problem)
		}
	}
}

// TestTheDocsCheckCatchesWhatIsStale: the checks above find a command or flag that does
// not exist, a missing file or heading, and leave other tools' commands and flags and
// our flags in prose away from our commands alone.
func TestTheDocsCheckCatchesWhatIsStale(t *testing.T) {
	tests := []struct {
		name, doc string
		problems  int
	}{
		{"a plugin command and its flags", "    cf run-benchmark -f benchmark.yml --dashboard   # --nothing in a comment\n", 0},
		{"a flag that does not exist", "    cf run-benchmark -f benchmark.yml --dashbord\n", 1},
		{"a plugin command that does not exist", "Then `cf benchmark-results RUN_ID`.\n", 1},
		{"a standalone command that does not exist", "    bin/cf-benchmark results RUN_ID\n", 1},
		{"a plugin name in prose", "`benchmark-status` and `benchmark-exports` reach it.\n", 1},
		{"a bare standalone command in prose", "4 `report --fail-on` failed, `report --fails-on` not\n", 1},
		{"a flag in a later span of the line", "`cf-benchmark report results/RUN_ID` (also `--baseline\nresults/OLD`, `--fail-on`)\n", 0},
		{"a wrong flag in a later span of the line", "`cf-benchmark report results/RUN_ID` (also `--basline DIR`)\n", 1},
		{"a line continued", "    CFBENCH_X=1 cf-benchmark export RUN_ID \\\n        --tunnel URL --tunnel-fingerprnt FP\n", 1},
		{"the standalone CLI's own flags", "`cf-benchmark --version` prints it; `cf-benchmark --verbose`\n", 1},
		{"other tools' flags", "    cf logs APP --recent | cf benchmark-logs parse --format combined\n    cf install-plugin -r cfbench cf-benchmark -f\n" +
			"    go test -short ./...\n\n`cfbench worker --relay URL` or `cf push --strategy rolling`\n", 0},
		{"our flag in prose, no command on its line", "given one by `--landscap`\n", 0},
		{"fenced code", "```sh\ncf benchmark-report RUN --baselin OLD\n```\n", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := staleInvocations("doc.md", tc.doc); len(got) != tc.problems {
				t.Errorf("%d problem(s), want %d: %q", len(got), tc.problems, got)
			}
		})
	}
	files := map[string]string{"docs/spec.md": "# Spec\n\n## Load levels\n", "README.md": "## Using it\n", "docs/running.md": "## Generator instances\n"}
	read := func(path string) (string, bool) { s, ok := files[path]; return s, ok }
	links := []struct {
		name, doc string
		problems  int
	}{
		{"pages and headings that exist", "[spec](spec.md), [levels](spec.md#load-levels), [use](../README.md#using-it), [web](https://example.com/x.md)", 0},
		{"a page that does not exist", "[gone](gone.md)", 1},
		{"a heading that does not exist", "[levels](spec.md#load-level)", 1},
		{"a heading of the page itself", "[below](#generator-instances), [gone](#generators)", 1},
	}
	for _, tc := range links {
		t.Run(tc.name, func(t *testing.T) {
			if got := staleLinks("docs/running.md", tc.doc, read); len(got) != tc.problems {
				t.Errorf("%d problem(s), want %d: %q", len(got), tc.problems, got)
			}
		})
	}
}

func readRepoFile(path string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(docsRoot, filepath.FromSlash(path)))
	return string(b), err == nil
}

var linkRE = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// staleLinks are the relative links of page (a path from the repository's root) whose
// file read cannot read, or whose #fragment is no heading of that file.
func staleLinks(page, text string, read func(path string) (string, bool)) []string {
	var out []string
	for _, m := range linkRE.FindAllStringSubmatch(text, -1) {
		target := m[1]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		file, fragment, _ := strings.Cut(target, "#")
		path := page
		if file != "" {
			path = filepath.ToSlash(filepath.Join(filepath.Dir(page), file))
		}
		body, ok := read(path)
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s: link %s: no file %s", page, target, path))
		case fragment != "" && strings.HasSuffix(path, ".md") && !slices.Contains(headingAnchors(body), fragment):
			out = append(out, fmt.Sprintf("%s: link %s: no heading #%s in %s", page, target, fragment, path))
		}
	}
	return out
}

// headingAnchors are the anchors GitHub gives the headings of a page: lower case, spaces
// as hyphens, other punctuation left out.
func headingAnchors(doc string) []string {
	var out []string
	for _, s := range docSegments(doc) {
		if s.heading == "" {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(s.heading) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		out = append(out, b.String())
	}
	return out
}

// segment is a piece of a page: a line of a code block (a continued line joined to
// the next), an inline code span of prose, or a heading's text.
type segment struct {
	line    int
	text    string
	span    bool
	heading string
}

// docSegments splits a Markdown page into its code (fenced or indented blocks, and
// the inline spans of prose paragraphs) and its headings.
func docSegments(doc string) []segment {
	var (
		out                        []segment
		para                       []string
		paraLine                   int
		fenced, prevBlank, wasCode = false, true, false
		continued                  *segment // a code line that ends in a backslash
	)
	flushParagraph := func() {
		out = append(out, codeSpans(strings.Join(para, "\n"), paraLine)...)
		para = nil
	}
	codeLine := func(n int, l string) {
		if continued != nil {
			continued.text += " " + strings.TrimSpace(l)
		} else {
			out = append(out, segment{line: n, text: l})
			continued = &out[len(out)-1]
		}
		if text, ok := strings.CutSuffix(continued.text, `\`); ok {
			continued.text = text
		} else {
			continued = nil
		}
	}
	for i, l := range strings.Split(doc, "\n") {
		n, trimmed := i+1, strings.TrimSpace(l)
		code := false
		switch {
		case strings.HasPrefix(trimmed, "```"):
			flushParagraph()
			fenced, continued = !fenced, nil
		case fenced || continued != nil:
			codeLine(n, l)
			code = !fenced
		case trimmed == "":
			flushParagraph()
		case (strings.HasPrefix(l, "    ") || strings.HasPrefix(l, "\t")) && (prevBlank || wasCode):
			flushParagraph()
			codeLine(n, l)
			code = true
		case strings.HasPrefix(trimmed, "#") && len(para) == 0:
			out = append(out, segment{line: n, heading: strings.TrimSpace(strings.TrimLeft(trimmed, "#"))})
		default:
			if len(para) == 0 {
				paraLine = n
			}
			para = append(para, l)
		}
		prevBlank, wasCode = trimmed == "", code
	}
	flushParagraph()
	return out
}

// codeSpans are the inline code spans of a paragraph that starts on line first.
func codeSpans(para string, first int) []segment {
	var out []segment
	for i := 0; i < len(para); {
		if para[i] != '`' {
			i++
			continue
		}
		n := 1
		for i+n < len(para) && para[i+n] == '`' {
			n++
		}
		fence := strings.Repeat("`", n)
		end := strings.Index(para[i+n:], fence)
		if end < 0 {
			break
		}
		text := para[i+n : i+n+end]
		out = append(out, segment{line: first + strings.Count(para[:i], "\n"), text: strings.ReplaceAll(text, "\n", " "), span: true})
		i += 2*n + end
	}
	return out
}

var (
	envAssignRE  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)
	flagRE       = regexp.MustCompile(`^--?([a-zA-Z][a-zA-Z0-9-]*)(=.*)?$`)
	commandRE    = regexp.MustCompile(`^[a-z][a-z-]*$`)
	pluginNameRE = regexp.MustCompile(`^(run-benchmark|benchmark-[a-z-]+)$`)
)

// mainFlags are the flags of cf-benchmark itself, before any command (Main).
var mainFlags = []string{"version", "h", "help"}

// hasFlag tells whether c takes the flag name (the flag package gives every command -h).
func hasFlag(c *Command, name string) bool {
	_, ok := c.FlagHelp()[name]
	return ok || name == "h" || name == "help"
}

// staleInvocations checks the invocations of our commands in page's code: a command is
// ours when a code line or span runs cf with a NAME containing benchmark, or
// cf-benchmark (also as bin/cf-benchmark) with any NAME, and, in prose, when a span
// starts with a plugin command's name or with a standalone command's name and more. A
// flag is that command's when it follows it on the same line: in its code line (up to
// a comment, a pipe or another command) or in a later span of the line that starts with
// a flag. Other tools' commands and their flags, and flags in prose on a line without
// a command of ours, are not checked.
func staleInvocations(page, text string) []string {
	var (
		out  []string
		cur  *Command
		line int
	)
	for _, s := range docSegments(text) {
		if s.heading != "" {
			continue
		}
		if s.line != line {
			line, cur = s.line, nil
		}
		problem := func(format string, args ...any) {
			out = append(out, fmt.Sprintf("%s:%d: `%s`: %s", page, s.line, strings.TrimSpace(s.text), fmt.Sprintf(format, args...)))
		}
		tokens := strings.Fields(s.text)
		atCommand := len(tokens) == 0 || !flagRE.MatchString(trimToken(tokens[0]))
		if atCommand {
			cur = nil
		}
	scan:
		for i := 0; i < len(tokens); i++ {
			tok := trimToken(tokens[i])
			switch {
			case strings.HasPrefix(tok, "#"): // a comment
				cur = nil
				break scan
			case tok == "|" || tok == "||" || tok == "&&" || tok == ";" || tok == "&":
				cur, atCommand = nil, true
				continue
			case !atCommand:
				// A command unavailable here declares no flags: they are checked where it runs.
				if m := flagRE.FindStringSubmatch(tok); m != nil && cur != nil && cur.Unavailable == "" && !hasFlag(cur, m[1]) {
					problem("%s has no flag %s", cur.Name, tok)
				}
				continue
			case envAssignRE.MatchString(tok):
				continue
			}
			atCommand = false
			next := ""
			if i+1 < len(tokens) {
				next = trimToken(tokens[i+1])
			}
			switch {
			case tok == "cf":
				i++
				if !strings.Contains(next, "benchmark") {
					continue
				}
				if cur = pluginCommand(next); cur == nil {
					problem("no plugin command %s", next)
				}
			case tok == "cf-benchmark" || strings.HasSuffix(tok, "/cf-benchmark"):
				i++
				switch m := flagRE.FindStringSubmatch(next); {
				case m != nil && !slices.Contains(mainFlags, m[1]):
					problem("cf-benchmark has no flag %s", next)
				case m == nil && next != "help" && commandRE.MatchString(next):
					if cur = Lookup(next); cur == nil {
						problem("no command %s", next)
					}
				}
			case s.span && i == 0 && pluginNameRE.MatchString(tok):
				if cur = pluginCommand(tok); cur == nil {
					problem("no plugin command %s", tok)
				}
			case s.span && i == 0 && len(tokens) > 1:
				if c := Lookup(tok); c != nil && c.Name == tok {
					cur = c
				}
			}
		}
	}
	return out
}

// trimToken strips the brackets and punctuation prose and synopses put around a word.
func trimToken(tok string) string {
	return strings.TrimRight(strings.TrimLeft(tok, "[("), "]),.:")
}

func pluginCommand(name string) *Command {
	for _, c := range PluginCommands() {
		if c.PluginName == name {
			return c
		}
	}
	return nil
}
