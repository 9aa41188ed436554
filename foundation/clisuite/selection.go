// Package clisuite runs the real cf CLI's own Ginkgo integration suites (module
// code.cloudfoundry.org/cli/v8, integration/v7) against a local foundation and counts
// what passed: the acceptance test of the foundation's CC v3 API, by the tests the cf
// CLI's maintainers wrote for a real Cloud Foundry.
//
// Which spec files run is Selection (or Quick); specs the foundation cannot serve by
// design (SSH, Docker images, TCP routing, service brokers, a second UAA client, ...)
// are listed with their reasons in exclude.txt and skipped by text.
package clisuite

import (
	_ "embed"
	"fmt"
	"regexp"
	"strings"
)

// Suite is one Ginkgo suite of integration/v7 and the spec files of it to run.
type Suite struct {
	Name string // push, isolated, global: integration/v7/NAME, compiled as NAME.test
	// Files are the spec files' base names.
	Files []string
	// Serial suites refuse to run on more than one Ginkgo process (global).
	Serial bool
}

// Selection is the files issue 19 names. `cf env`'s specs live in the global suite.
var Selection = []Suite{
	{Name: "push", Files: testFiles("",
		"name_only", "simple_manifest_only", "manifest_with_app_name", "instances_flag", "memory_flag",
		"no_start", "no_route", "path", "random_route", "health_check", "push_output", "resource_matching",
		"manifest_diff", "input_errors", "canary_push")},
	{Name: "isolated", Files: append(testFiles("_command",
		"app", "apps", "scale", "start", "stop", "restart", "restage", "delete", "rename", "set_env",
		"unset_env", "logs", "events", "routes", "create_route", "map_route", "unmap_route", "delete_route",
		"domains", "org", "orgs", "create_org", "space", "spaces", "create_space", "delete_space",
		"marketplace", "create_service", "bind_service", "unbind_service", "isolation_segments",
		"create_isolation_segment", "enable_org_isolation", "set_space_isolation_segment", "login", "auth",
		"target", "curl"), testFiles("", "continue_deployment", "cancel_deployment")...)},
	{Name: "global", Files: testFiles("_command", "env"), Serial: true},
}

// Quick is the subset `make test` runs: a few files that exercise auth, targeting,
// orgs, spaces (and their label filters), domains and isolation segments, without
// pushing an app.
var Quick = []Suite{
	{Name: "isolated", Files: testFiles("_command", "target", "create_org", "create_space", "org", "orgs", "spaces")},
}

// Only keeps the files of suites whose base name begins with one of words (e.g.
// "routes_command" or "create_"), and the suites that keep any; an error names a word
// that matches no file.
func Only(suites []Suite, words []string) ([]Suite, error) {
	var out []Suite
	used := map[string]bool{}
	for _, s := range suites {
		kept := s
		kept.Files = nil
		for _, f := range s.Files {
			for _, w := range words {
				if strings.HasPrefix(f, w) {
					kept.Files = append(kept.Files, f)
					used[w] = true
					break
				}
			}
		}
		if len(kept.Files) > 0 {
			out = append(out, kept)
		}
	}
	for _, w := range words {
		if !used[w] {
			return nil, fmt.Errorf("no spec file of the selection matches %q", w)
		}
	}
	return out, nil
}

func testFiles(suffix string, names ...string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = n + suffix + "_test.go"
	}
	return out
}

// Exclusion is a group of specs left out, by a regular expression on a spec's full text
// (its containers' texts and its own, joined by spaces, as Ginkgo's --skip sees it).
type Exclusion struct {
	Pattern *regexp.Regexp
	Reason  string
	Line    int
}

//go:embed exclude.txt
var excludeFile string

// Exclusions are the specs of exclude.txt.
func Exclusions() ([]Exclusion, error) { return parseExclusions("exclude.txt", excludeFile) }

// parseExclusions reads lines "PATTERN | REASON"; blank lines and # comments are skipped.
func parseExclusions(name, text string) ([]Exclusion, error) {
	var out []Exclusion
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		pattern, reason, ok := strings.Cut(line, " | ")
		pattern, reason = strings.TrimSpace(pattern), strings.TrimSpace(reason)
		if !ok || pattern == "" || reason == "" {
			return nil, fmt.Errorf("%s:%d: want PATTERN | REASON, got %q", name, i+1, line)
		}
		re, err := regexp.Compile(pattern)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: pattern: %w", name, i+1, err)
		}
		out = append(out, Exclusion{Pattern: re, Reason: reason, Line: i + 1})
	}
	return out, nil
}
