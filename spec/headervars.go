package spec

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// A header value may take a secret from the generator's environment, written ${NAME}
// (e.g. Authorization: "${CF_OAUTH_TOKEN}"): the spec, which is stored with the run,
// keeps the reference, and each generator instance expands it when it starts.
var headerVar = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// checkHeaderVars rejects a "${" that does not start a well-formed ${NAME}.
func checkHeaderVars(val string) string {
	if strings.Count(val, "${") != len(headerVar.FindAllStringIndex(val, -1)) {
		return `a "${" in a header value must start an environment variable reference ${NAME} (letters, digits, _)`
	}
	return ""
}

// HeaderVars returns the environment variables the workload's header values name, sorted
// and each once.
func (w *Workload) HeaderVars() []string {
	var out []string
	for _, r := range w.Requests {
		for _, v := range r.Headers {
			for _, m := range headerVar.FindAllStringSubmatch(v, -1) {
				out = append(out, m[1])
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ExpandHeader replaces each ${NAME} in a header value with lookup(NAME). A name lookup
// does not have, or has empty, is an error naming it.
func ExpandHeader(val string, lookup func(string) (string, bool)) (string, error) {
	var missing string
	out := headerVar.ReplaceAllStringFunc(val, func(ref string) string {
		name := ref[2 : len(ref)-1]
		v, ok := lookup(name)
		if !ok || v == "" {
			missing = name
		}
		return v
	})
	if missing != "" {
		return "", fmt.Errorf("${%s} is not set in the environment", missing)
	}
	return out, nil
}
