package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// value is a node to decode, the field path it has in the spec, and the node errors
// about it point at: the key for a mapping field (people find "weight: heavy" by its
// key), the element itself in a list.
type value struct {
	node *yaml.Node // aliases already followed
	pos  *yaml.Node
	path string
}

// decoder walks a yaml.Node tree against the schema and collects every problem.
type decoder struct {
	file string
	errs Errors
	// pos is where each field the spec has starts, by field path, for problems found
	// after parsing (Spec.Errorf).
	pos map[string]position
	// landscapeGiven: the landscape comes from elsewhere (ParseWithLandscape), so a
	// spec with manifests may lack its own.
	landscapeGiven bool
	// work counts the mappings and entries visited, so that a small file of nested
	// aliases and merge keys ("billion laughs") cannot make the walk expensive.
	work int
}

const (
	maxMergeDepth = 16
	maxWork       = 100_000
)

func (d *decoder) add(line, col int, path, msg string) {
	d.errs = append(d.errs, &Error{File: d.file, Line: line, Column: col, Path: path, Msg: msg})
}

// place remembers where v is, unless an alias already placed its path.
func (d *decoder) place(v value) {
	if d.pos == nil {
		d.pos = map[string]position{}
	}
	if _, ok := d.pos[v.path]; !ok && v.pos != nil {
		d.pos[v.path] = position{v.pos.Line, v.pos.Column}
	}
}

func (d *decoder) errorf(v value, format string, args ...any) {
	d.add(v.pos.Line, v.pos.Column, v.path, fmt.Sprintf(format, args...))
}

// document returns the root node of the single YAML document in data, or nil after
// recording why there is none.
func (d *decoder) document(data []byte) (root *yaml.Node) {
	defer func() {
		// yaml.v3 has panicked on malformed input before (CVE-2022-28948); a bad spec
		// must come out as an error, never take the process down.
		if r := recover(); r != nil {
			root = nil
			d.add(1, 0, "", fmt.Sprintf("invalid YAML: parser failed: %v", r))
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if !errors.Is(err, io.EOF) {
			d.syntaxError(err, data)
			return nil
		}
	}
	var next yaml.Node
	if err := dec.Decode(&next); err == nil {
		d.add(next.Line, next.Column, "", `a spec is a single YAML document; remove the second one (from "---")`)
	} else if !errors.Is(err, io.EOF) {
		d.syntaxError(err, data)
	}
	if len(doc.Content) == 0 || isNull(resolve(doc.Content[0])) {
		d.add(1, 0, "", "the file is empty; a spec needs at least version, name, variants, workload and ramp")
		return nil
	}
	return resolve(doc.Content[0])
}

// parserProblems are the yaml.v3 messages raised by its parser rather than its scanner.
// yaml.v3 reports their line 0-based (the scanner's 1-based), so it is corrected here.
var parserProblems = map[string]bool{
	"did not find expected <stream-start>":   true,
	"did not find expected <document start>": true,
	"found undefined tag handle":             true,
	"did not find expected node content":     true,
	"did not find expected '-' indicator":    true,
	"did not find expected key":              true,
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found duplicate %TAG directive":         true,
}

// syntaxError records a yaml.v3 error as one line with the best line number it can
// find. yaml.v3 only offers the position inside its message text, so that is parsed.
func (d *decoder) syntaxError(err error, data []byte) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if n, tail, ok := strings.Cut(rest, ": "); ok {
			if l, err := strconv.Atoi(n); err == nil {
				line, msg = l, tail
			}
		}
	}
	anchor, isAnchor := strings.CutPrefix(msg, "unknown anchor '")
	switch {
	case parserProblems[msg]:
		line++ // also right when no line was given: it was 0
	case isAnchor:
		if i := bytes.Index(data, []byte("*"+strings.TrimSuffix(anchor, "' referenced"))); i >= 0 {
			line = 1 + bytes.Count(data[:i], []byte("\n"))
		}
	case line == 0:
		// yaml.v3 leaves the line out when it is the first one, and for encoding errors.
		line = badCharLine(data)
	}
	d.add(max(line, 1), 0, "", "invalid YAML: "+strings.ReplaceAll(msg, "\n", " "))
}

// badCharLine returns the 1-based line of the first byte YAML does not accept
// (invalid UTF-8 or a control character), or 0 when there is none.
func badCharLine(data []byte) int {
	line := 1
	for len(data) > 0 {
		r, size := utf8.DecodeRune(data)
		ok := r == '\t' || r == '\n' || r == '\r' || (r >= 0x20 && r <= 0x7e) || r == 0x85 ||
			(r >= 0xa0 && r <= 0xd7ff) || (r >= 0xe000 && r <= 0xfffd) || r >= 0x10000
		if !ok || (r == utf8.RuneError && size == 1) {
			return line
		}
		if r == '\n' {
			line++
		}
		data = data[size:]
	}
	return 0
}

// resolve follows aliases to the node they name.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < maxMergeDepth; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

// describe says what n is for a "got …" message.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "nothing"
		case "!!int", "!!float", "!!bool":
			return shorten(n.Value)
		}
		return quote(n.Value)
	}
	return "an alias"
}

// quote quotes s for a message, shortened so that a message stays one readable line.
func quote(s string) string { return strconv.Quote(shorten(s)) }

func shorten(s string) string {
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// field is one key a mapping may have, with the function that decodes its value.
type field struct {
	name     string
	required bool
	decode   func(value)
}

func required(name string, decode func(value)) field { return field{name, true, decode} }
func optional(name string, decode func(value)) field { return field{name, false, decode} }

// fieldSet holds the fields a mapping had, by name; fields with an empty (null) value
// count as absent.
type fieldSet map[string]value

// object decodes the mapping v against fields: unknown and missing fields are errors,
// the others are decoded in the order given, so that later ones may look at earlier.
// It returns what was present for cross-field rules, and false if v is no mapping.
func (d *decoder) object(v value, fields ...field) (fieldSet, bool) {
	if v.node.Kind != yaml.MappingNode {
		d.errorf(v, "must be a mapping, got %s", describe(v.node))
		return nil, false
	}
	got := fieldSet{}
	nulls := fieldSet{}
	d.place(v)
	for _, p := range d.pairs(v.node, v.path, 0) {
		child := value{node: p.val, pos: p.key, path: join(v.path, p.key.Value)}
		d.place(child)
		switch f := lookup(fields, p.key.Value); {
		case f == nil:
			d.errorf(child, "unknown field%s", suggest(p.key.Value, fields))
		case isNull(p.val):
			nulls[f.name] = child
		default:
			got[f.name] = child
		}
	}
	for _, f := range fields {
		if c, ok := got[f.name]; ok {
			f.decode(c)
		} else if f.required {
			where, ok := nulls[f.name]
			if !ok {
				where = value{pos: v.pos, path: join(v.path, f.name)}
			}
			d.errorf(where, "is required")
		}
	}
	return got, true
}

func lookup(fields []field, name string) *field {
	for i := range fields {
		if fields[i].name == name {
			return &fields[i]
		}
	}
	return nil
}

// suggest returns a " (did you mean …?)" hint for an unknown key, or lists the keys.
func suggest(key string, fields []field) string {
	best, bestDist := "", 3
	for _, f := range fields {
		if dist := editDistance(strings.ToLower(key), f.name); dist < bestDist && dist < len(key) {
			best, bestDist = f.name, dist
		}
	}
	if best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	return " (allowed: " + strings.Join(names, ", ") + ")"
}

// editDistance is the Levenshtein distance between a and b in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

type pair struct{ key, val *yaml.Node }

// pairs returns the entries of mapping m with aliases followed and merge keys ("<<")
// applied: the mapping's own keys win over merged ones, earlier merged mappings over
// later ones. Duplicate keys and keys that are not scalars are errors.
func (d *decoder) pairs(m *yaml.Node, path string, depth int) []pair {
	var own, merged []pair
	seen := map[string]*yaml.Node{}
	if !d.spend(1+len(m.Content)/2, value{pos: m, path: path}) {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, val := resolve(m.Content[i]), m.Content[i+1]
		switch {
		case k.Kind != yaml.ScalarNode:
			d.errorf(value{pos: m.Content[i], path: path}, "keys must be strings, got %s", describe(k))
		case k.ShortTag() == "!!merge":
			merged = append(merged, d.merge(value{node: resolve(val), pos: k, path: path}, depth)...)
		case seen[k.Value] != nil:
			d.errorf(value{pos: k, path: join(path, k.Value)}, "duplicate key (first defined at line %d)", seen[k.Value].Line)
		default:
			seen[k.Value] = k
			own = append(own, pair{k, resolve(val)})
		}
	}
	for _, p := range merged {
		if seen[p.key.Value] == nil {
			seen[p.key.Value] = p.key
			own = append(own, p)
		}
	}
	return own
}

// merge returns the entries a merge key's value contributes: a mapping or a list of
// mappings, each of which may merge further.
func (d *decoder) merge(v value, depth int) []pair {
	if depth >= maxMergeDepth {
		d.errorf(v, "merge keys (<<) nest too deeply; is an alias recursive?")
		return nil
	}
	maps := []value{v}
	if v.node.Kind == yaml.SequenceNode {
		if !d.spend(len(v.node.Content), v) {
			return nil
		}
		maps = make([]value, len(v.node.Content))
		for i, n := range v.node.Content {
			maps[i] = value{node: resolve(n), pos: n, path: v.path}
		}
	}
	var out []pair
	for _, m := range maps {
		if m.node.Kind != yaml.MappingNode {
			d.errorf(m, "<< must merge a mapping or a list of mappings, got %s", describe(m.node))
			continue
		}
		out = append(out, d.pairs(m.node, m.path, depth+1)...)
	}
	return out
}

// spend adds n to the work done and reports whether it stays within maxWork.
func (d *decoder) spend(n int, v value) bool {
	d.work += n
	if d.work <= maxWork {
		return true
	}
	if d.work-n <= maxWork {
		d.errorf(v, "more than %d mapping entries, counting those that aliases repeat", maxWork)
	}
	return false
}

// list returns the elements of the sequence v.
func (d *decoder) list(v value) ([]value, bool) {
	if v.node.Kind != yaml.SequenceNode {
		d.errorf(v, "must be a list, got %s", describe(v.node))
		return nil, false
	}
	out := make([]value, len(v.node.Content))
	for i, n := range v.node.Content {
		out[i] = value{node: resolve(n), pos: n, path: fmt.Sprintf("%s[%d]", v.path, i)}
	}
	return out, true
}

// scalar reports whether v is a scalar with one of the given tags.
func scalar(v value, tags ...string) bool {
	if v.node.Kind != yaml.ScalarNode {
		return false
	}
	tag := v.node.ShortTag()
	for _, t := range tags {
		if t == tag {
			return true
		}
	}
	return false
}

// text decodes any string, also an empty one. Other scalars are errors: "name: 2024"
// is an integer in YAML and the fix (quoting) is worth saying.
func (d *decoder) text(dst *string) func(value) {
	return func(v value) {
		if s, ok := d.stringValue(v); ok {
			*dst = s
		}
	}
}

func (d *decoder) stringValue(v value) (string, bool) {
	if scalar(v, "!!str") {
		return v.node.Value, true
	}
	if v.node.Kind == yaml.ScalarNode {
		d.errorf(v, "must be a string, got %s (quote it to make it a string)", describe(v.node))
	} else {
		d.errorf(v, "must be a string, got %s", describe(v.node))
	}
	return "", false
}

// str decodes a non-empty string, then checks it with the optional check, which
// returns a problem or "".
func (d *decoder) str(dst *string, checks ...func(string) string) func(value) {
	return func(v value) {
		s, ok := d.stringValue(v)
		if !ok {
			return
		}
		if s == "" {
			d.errorf(v, "must not be empty")
			return
		}
		for _, check := range checks {
			if msg := check(s); msg != "" {
				d.errorf(v, "%s", msg)
				return
			}
		}
		*dst = s
	}
}

// enum decodes one of the allowed strings.
func enum[T ~string](d *decoder, dst *T, allowed ...T) func(value) {
	return func(v value) {
		if scalar(v, "!!str") {
			for _, a := range allowed {
				if string(a) == v.node.Value {
					*dst = a
					return
				}
			}
		}
		names := make([]string, len(allowed))
		for i, a := range allowed {
			names[i] = string(a)
		}
		d.errorf(v, "must be one of %s, got %s", strings.Join(names, ", "), describe(v.node))
	}
}

// integer decodes an integer in [lo, hi]; lo is 0 or 1.
func (d *decoder) integer(dst *int, lo, hi int) func(value) {
	want := "a positive integer"
	if lo == 0 {
		want = "a non-negative integer"
	}
	return func(v value) {
		var n int
		switch {
		case !scalar(v, "!!int") || v.node.Decode(&n) != nil:
			d.errorf(v, "must be %s, got %s", want, describe(v.node))
		case n < lo:
			d.errorf(v, "must be %s, got %d", want, n)
		case n > hi:
			d.errorf(v, "must be at most %d, got %d", hi, n)
		default:
			*dst = n
		}
	}
}

// number decodes a finite number (integer or float) for which ok holds; want says
// what ok accepts ("a number greater than 0").
func (d *decoder) number(dst *float64, ok func(float64) bool, want string) func(value) {
	return func(v value) {
		var x float64
		if !scalar(v, "!!int", "!!float") || v.node.Decode(&x) != nil ||
			math.IsNaN(x) || math.IsInf(x, 0) || !ok(x) {
			d.errorf(v, "must be %s, got %s", want, describe(v.node))
			return
		}
		*dst = x
	}
}

func (d *decoder) boolean(dst *bool) func(value) {
	return func(v value) {
		var b bool
		if !scalar(v, "!!bool") || v.node.Decode(&b) != nil {
			d.errorf(v, "must be true or false, got %s", describe(v.node))
			return
		}
		*dst = b
	}
}

// positive as the minimum of a duration means "greater than 0".
const positive = time.Duration(1)

// duration decodes a Go duration string ("1m30s") of at least least.
func (d *decoder) duration(dst *time.Duration, least time.Duration) func(value) {
	return func(v value) {
		const like = `like "30s", "1m30s" or "250ms"`
		if scalar(v, "!!int", "!!float") {
			d.errorf(v, "must be a duration with a unit, %s; got the bare number %s", like, v.node.Value)
			return
		}
		s, ok := d.stringValue(v)
		if !ok {
			return
		}
		t, err := time.ParseDuration(s)
		switch {
		case err != nil && isNumber(s):
			d.errorf(v, "must be a duration with a unit, %s; got the bare number %s", like, s)
		case err != nil:
			d.errorf(v, "must be a duration %s, got %s", like, quote(s))
		case t < 0:
			d.errorf(v, "must not be negative, got %s", s)
		case t < least && least == positive:
			d.errorf(v, "must be greater than 0, got %s", s)
		case t < least:
			d.errorf(v, "must be at least %s, got %s", least, s)
		default:
			*dst = t
		}
	}
}

// durationAtMost decodes a duration from least to most.
func (d *decoder) durationAtMost(dst *time.Duration, least, most time.Duration) func(value) {
	return func(v value) {
		t := time.Duration(-1)
		d.duration(&t, least)(v)
		switch {
		case t > most:
			d.errorf(v, "must be at most %s, got %s", most, v.node.Value)
		case t >= 0:
			*dst = t
		}
	}
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// stringMap decodes a mapping of strings. Values may be any scalar and keep their
// literal text, so that `POOL_SIZE: 30` means "30". check returns a problem with an
// entry or "".
func (d *decoder) stringMap(dst *map[string]string, check func(key, val string) string) func(value) {
	return func(v value) {
		if v.node.Kind != yaml.MappingNode {
			d.errorf(v, "must be a mapping, got %s", describe(v.node))
			return
		}
		m := map[string]string{}
		for _, p := range d.pairs(v.node, v.path, 0) {
			child := value{node: p.val, pos: p.key, path: join(v.path, p.key.Value)}
			d.place(child)
			switch {
			case !scalar(child, "!!str", "!!int", "!!float", "!!bool"):
				d.errorf(child, `must be a string, got %s (write "" for an empty value)`, describe(p.val))
			case check(p.key.Value, p.val.Value) != "":
				d.errorf(child, "%s", check(p.key.Value, p.val.Value))
			default:
				m[p.key.Value] = p.val.Value
			}
		}
		*dst = m
	}
}
