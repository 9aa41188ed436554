package elastic

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// schema decodes a search answer in one pass, taking from each _source only the
// wanted paths. It is a struct type built from the paths (reflect.StructOf) with a
// field for every way a document may spell each path: nested objects ("rtr":
// {"status": …}), dotted keys ("rtr.status": …) or a mix ("rtr": {"app.id": …}), so
// encoding/json skips everything else without building it. Decoding every _source into
// maps instead costs about three times as much.
type schema struct {
	paths []string       // the wanted paths; a document's values are indexed alike
	index map[string]int // path → index
	root  *node
	resp  reflect.Type // the answer: searchAnswer's fields, and hits typed by root
}

// node is the struct type of one JSON object on the way to wanted paths.
type node struct {
	typ    reflect.Type
	fields []nodeField // by struct field index
}

type nodeField struct {
	leaf  int   // the path this key ends, -1 if none
	child *node // the object under this key when paths go on through it
	// deep are the paths that go on below a key that is also a leaf: they are read
	// from the leaf's decoded value.
	deep []deepPath
}

type deepPath struct {
	leaf int
	rest string
}

// newSchema builds the schema for paths (no duplicates, none empty).
func newSchema(paths []string) *schema {
	s := &schema{paths: paths, index: map[string]int{}}
	type suffix struct {
		leaf int
		segs []string
	}
	all := make([]suffix, len(paths))
	for i, p := range paths {
		s.index[p] = i
		all[i] = suffix{i, strings.Split(p, ".")}
	}
	var build func(suffixes []suffix) *node
	build = func(suffixes []suffix) *node {
		// Every path's first key may be its first segment or several joined by dots.
		byKey := map[string][]suffix{}
		var keys []string
		for _, sf := range suffixes {
			for j := 1; j <= len(sf.segs); j++ {
				k := strings.Join(sf.segs[:j], ".")
				if _, ok := byKey[k]; !ok {
					keys = append(keys, k)
				}
				byKey[k] = append(byKey[k], suffix{sf.leaf, sf.segs[j:]})
			}
		}
		n := &node{}
		var sfields []reflect.StructField
		for i, k := range keys {
			f := nodeField{leaf: -1}
			var rest []suffix
			for _, sf := range byKey[k] {
				if len(sf.segs) == 0 {
					f.leaf = sf.leaf
				} else {
					rest = append(rest, sf)
				}
			}
			typ := reflect.TypeFor[any]()
			switch {
			case f.leaf >= 0:
				for _, sf := range rest {
					f.deep = append(f.deep, deepPath{sf.leaf, strings.Join(sf.segs, ".")})
				}
			default:
				f.child = build(rest)
				typ = f.child.typ
			}
			n.fields = append(n.fields, f)
			sfields = append(sfields, reflect.StructField{
				Name: fmt.Sprintf("F%d", i), Type: typ, Tag: reflect.StructTag(`json:"` + k + `"`),
			})
		}
		n.typ = reflect.StructOf(sfields)
		return n
	}
	s.root = build(all)
	hit := reflect.StructOf([]reflect.StructField{
		{Name: "Index", Type: reflect.TypeFor[string](), Tag: `json:"_index"`},
		{Name: "ID", Type: reflect.TypeFor[string](), Tag: `json:"_id"`},
		{Name: "Sort", Type: reflect.TypeFor[[]json.Number](), Tag: `json:"sort"`},
		{Name: "Source", Type: s.root.typ, Tag: `json:"_source"`},
	})
	hits := reflect.StructOf([]reflect.StructField{
		{Name: "Total", Type: reflect.TypeFor[json.RawMessage](), Tag: `json:"total"`},
		{Name: "Hits", Type: reflect.SliceOf(hit), Tag: `json:"hits"`},
	})
	s.resp = reflect.StructOf([]reflect.StructField{
		{Name: "Answer", Type: reflect.TypeFor[searchAnswer](), Tag: `json:"-"`},
		{Name: "PitID", Type: reflect.TypeFor[string](), Tag: `json:"pit_id"`},
		{Name: "ScrollID", Type: reflect.TypeFor[string](), Tag: `json:"_scroll_id"`},
		{Name: "TimedOut", Type: reflect.TypeFor[bool](), Tag: `json:"timed_out"`},
		{Name: "Shards", Type: reflect.TypeFor[shardsInfo](), Tag: `json:"_shards"`},
		{Name: "Hits", Type: hits, Tag: `json:"hits"`},
	})
	return s
}

// searchAnswer is what a pull reads of a search answer.
type searchAnswer struct {
	PitID, ScrollID string
	TimedOut        bool
	Shards          shardsInfo
	Total           json.RawMessage // {"value":n,"relation":"eq"}, or n before 7.0
	Hits            []hit
}

type shardsInfo struct {
	Failed   int `json:"failed"`
	Failures []struct {
		Reason struct {
			Type string `json:"type"`
		} `json:"reason"`
	} `json:"failures"`
}

// hit is one document of an answer: where it is, its sort values and the values of
// the schema's paths (nil where absent).
type hit struct {
	Index, ID string
	Sort      []json.Number
	vals      []any
}

// decode parses a search answer.
func (s *schema) decode(b []byte) (*searchAnswer, error) {
	v := reflect.New(s.resp)
	if err := json.Unmarshal(b, v.Interface()); err != nil {
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) {
			return nil, err
		}
		// A document whose field has another type than expected (an object where a
		// value was wanted): that field is left out, the rest decoded.
	}
	r := v.Elem()
	a := &searchAnswer{
		PitID:    r.Field(1).String(),
		ScrollID: r.Field(2).String(),
		TimedOut: r.Field(3).Bool(),
		Shards:   r.Field(4).Interface().(shardsInfo),
	}
	hits := r.Field(5)
	a.Total = hits.Field(0).Interface().(json.RawMessage)
	list := hits.Field(1)
	a.Hits = make([]hit, list.Len())
	slab := make([]any, len(a.Hits)*len(s.paths))
	for i := range a.Hits {
		h := list.Index(i)
		vals := slab[i*len(s.paths) : (i+1)*len(s.paths) : (i+1)*len(s.paths)]
		a.Hits[i] = hit{Index: h.Field(0).String(), ID: h.Field(1).String(),
			Sort: h.Field(2).Interface().([]json.Number), vals: vals}
		s.root.collect(h.Field(3), vals)
	}
	return a, nil
}

// collect stores the values found under n in vals; the first spelling found wins.
func (n *node) collect(v reflect.Value, vals []any) {
	for i := range n.fields {
		f := &n.fields[i]
		fv := v.Field(i)
		if f.child != nil {
			f.child.collect(fv, vals)
			continue
		}
		x := fv.Interface()
		if x == nil {
			continue
		}
		if vals[f.leaf] == nil {
			vals[f.leaf] = x
		}
		if m, ok := x.(map[string]any); ok {
			for _, d := range f.deep {
				if dv, ok := lookup(m, d.rest); ok && vals[d.leaf] == nil {
					vals[d.leaf] = dv
				}
			}
		}
	}
}

// get is a hit's value at a wanted path.
func (s *schema) get(h *hit, path string) (any, bool) {
	i, ok := s.index[path]
	if !ok || path == "" {
		return nil, false
	}
	v := h.vals[i]
	return v, v != nil
}
