package spec

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/cf-benchmark/cf-benchmark/internal/bytesize"
)

// maxMatrixVariants caps the variants of a spec after its matrices are expanded: each
// is a pushed app and a generator app, and a ramp of its own.
const maxMatrixVariants = 64

// Setting is one value of a matrix dimension that a variant has.
type Setting struct {
	// Key is the dimension: "env.NAME", "memory" or "instances".
	Key string
	// Value is the value as the app gets it ("30", "800M", "2").
	Value string
	// Label is the value's part of the variant's and the app's names ("30", "800m",
	// "i2", or the label the spec gives the value).
	Label string
}

// MatrixSuffix is what a matrix cell adds to the variant's name and to the pushed
// app's name (and its route hosts): "-" and the labels of its settings joined by "-",
// in the order the matrix lists them; "" without a matrix.
func (v *Variant) MatrixSuffix() string {
	if len(v.Matrix) == 0 {
		return ""
	}
	labels := make([]string, len(v.Matrix))
	for i, s := range v.Matrix {
		labels[i] = s.Label
	}
	return "-" + strings.Join(labels, "-")
}

// axis is one dimension of a matrix: its key and its values in the order written.
type axis struct {
	key    string
	values []Setting
}

var labelPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// slug makes a label of a value: lowercase letters and digits, other runs as one dash.
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		} else {
			dash = true
		}
	}
	return b.String()
}

// matrix decodes a variant's matrix into its dimensions: env (a mapping of variable
// names to values), memory and instances. Each dimension is a list of values, or a
// mapping of labels to values for values that make poor names (JAVA_OPTS).
func (d *decoder) matrix(dst *[]axis, env map[string]string) func(value) {
	return func(v value) {
		if v.node.Kind != yaml.MappingNode {
			d.errorf(v, "must be a mapping of env, memory and instances to the values to try, got %s", describe(v.node))
			return
		}
		d.place(v)
		fields := []field{optional("env", nil), optional("memory", nil), optional("instances", nil)}
		pairs := d.pairs(v.node, v.path, 0)
		if len(pairs) == 0 {
			d.errorf(v, "must list at least one of env, memory and instances with the values to try")
		}
		for _, p := range pairs {
			child := value{node: p.val, pos: p.key, path: join(v.path, p.key.Value)}
			d.place(child)
			switch p.key.Value {
			case "env":
				d.matrixEnv(child, dst, env)
			case "memory":
				d.axis(child, dst, "memory", checkMemory, slug)
			case "instances":
				d.axis(child, dst, "instances", checkInstances, func(s string) string { return "i" + s })
			default:
				d.errorf(child, "unknown field%s", suggest(p.key.Value, fields))
			}
		}
	}
}

func (d *decoder) matrixEnv(v value, dst *[]axis, env map[string]string) {
	if v.node.Kind != yaml.MappingNode {
		d.errorf(v, "must be a mapping of variable names to lists of values, got %s", describe(v.node))
		return
	}
	pairs := d.pairs(v.node, v.path, 0)
	if len(pairs) == 0 {
		d.errorf(v, "must name at least one variable")
	}
	for _, p := range pairs {
		child := value{node: p.val, pos: p.key, path: join(v.path, p.key.Value)}
		d.place(child)
		name := p.key.Value
		if msg := checkEnv(name, ""); msg != "" {
			d.errorf(child, "%s", msg)
			continue
		}
		if _, both := env[name]; both {
			d.errorf(child, "is also set in the variant's env; set it in one place")
			continue
		}
		d.axis(child, dst, "env."+name, func(string) string { return "" }, slug)
	}
}

func checkMemory(s string) string {
	if _, err := bytesize.Megabytes(s); err != nil {
		return err.Error()
	}
	return ""
}

// size decodes a CF size (10G, 512M) into MB.
func (d *decoder) size(dst *int) func(value) {
	return func(v value) {
		s, ok := d.stringValue(v)
		if !ok {
			return
		}
		mb, err := bytesize.Megabytes(s)
		if err != nil {
			d.errorf(v, "%v", err)
			return
		}
		*dst = mb
	}
}

func checkInstances(s string) string {
	if n, err := strconv.Atoi(s); err != nil || n < 1 || n > maxInstances {
		return fmt.Sprintf("must be a whole number from 1 to %d, got %s", maxInstances, quote(s))
	}
	return ""
}

// axis decodes the values of one dimension: a list of scalars, labelled by label(value),
// or a mapping of labels to scalars. check returns a problem with a value or "".
func (d *decoder) axis(v value, dst *[]axis, key string, check func(string) string, label func(string) string) {
	a := axis{key: key}
	labels := map[string]value{}
	add := func(at value, lbl string, explicit bool) {
		if !scalar(at, "!!str", "!!int", "!!float", "!!bool") {
			d.errorf(at, "must be a value (a string or a number), got %s", describe(at.node))
			return
		}
		val := at.node.Value
		if msg := check(val); msg != "" {
			d.errorf(at, "%s", msg)
			return
		}
		if !explicit {
			lbl = label(val)
		}
		switch {
		case explicit && !labelPattern.MatchString(lbl):
			d.errorf(at, "label %s must be lowercase letters, digits and dashes, starting with a letter or digit", quote(lbl))
			return
		case lbl == "":
			d.errorf(at, "%s makes no name (no letters or digits); give the values labels: {label: value, ...}", quote(val))
			return
		}
		if first, dup := labels[lbl]; dup {
			d.errorf(at, "makes the same name %q as %s; give the values labels: {label: value, ...}", lbl, quote(first.node.Value))
			return
		}
		labels[lbl] = at
		a.values = append(a.values, Setting{Key: key, Value: val, Label: lbl})
	}
	switch v.node.Kind {
	case yaml.SequenceNode:
		items, _ := d.list(v)
		for _, it := range items {
			add(it, "", false)
		}
	case yaml.MappingNode:
		for _, p := range d.pairs(v.node, v.path, 0) {
			child := value{node: p.val, pos: p.key, path: join(v.path, p.key.Value)}
			d.place(child)
			add(child, p.key.Value, true)
		}
	default:
		d.errorf(v, "must be a list of values to try, or a mapping of labels to values, got %s", describe(v.node))
		return
	}
	if len(v.node.Content) == 0 {
		d.errorf(v, "must list at least one value")
		return
	}
	if len(a.values) > 0 {
		*dst = append(*dst, a)
	}
}

// expand returns one variant per combination of the axes' values, the first axis
// varying slowest, each named base's name plus the labels (Variant.MatrixSuffix).
func expand(base Variant, axes []axis) []Variant {
	out := []Variant{base}
	for _, a := range axes {
		next := make([]Variant, 0, len(out)*len(a.values))
		for _, v := range out {
			for _, s := range a.values {
				w := v
				w.Matrix = append(append([]Setting(nil), v.Matrix...), s)
				next = append(next, w)
			}
		}
		out = next
	}
	for i := range out {
		v := &out[i]
		v.Name = base.Name + v.MatrixSuffix()
		env := map[string]string{}
		for k, val := range base.Env {
			env[k] = val
		}
		for _, s := range v.Matrix {
			switch {
			case strings.HasPrefix(s.Key, "env."):
				env[strings.TrimPrefix(s.Key, "env.")] = s.Value
			case s.Key == "memory":
				v.Memory = s.Value
			case s.Key == "instances":
				v.Instances, _ = strconv.Atoi(s.Value)
			}
		}
		v.Env = env
	}
	return out
}

// combinations is the number of variants axes make.
func combinations(axes []axis) int {
	n := 1
	for _, a := range axes {
		n *= len(a.values)
	}
	return n
}
