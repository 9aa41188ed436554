package spec

import (
	"bytes"
	"errors"
	"fmt"

	"gopkg.in/yaml.v3"
)

// LandscapeOutput is the name of the Terraform output that ParseWithLandscape reads
// (terraform/outputs.tf).
const LandscapeOutput = "landscape"

// ParseWithLandscape is Parse for a spec whose landscape comes from Terraform: landData
// is what `tofu output -json` (or `terraform output -json`) printed for the module in
// terraform/, read from the file landName. The value of its output "landscape" has a
// landscape: and a results_db: section, shaped and checked as a spec's own; they
// replace the spec's (which may then have none), but for results_db.relay, which stays
// the spec's. Errors name the file, line and field
// they are in, either file. It also returns the spec's text with the landscape in it,
// which is what a run stores.
func ParseWithLandscape(name string, data []byte, baseDir, landName string, landData []byte) (*Spec, []byte, error) {
	land, db, node, lerr := parseLandscapeOutput(landName, landData)
	s, err := parse(&decoder{file: name, landscapeGiven: true}, data, baseDir)
	var all Errors
	for _, e := range []error{lerr, err} {
		var es Errors
		if errors.As(e, &es) {
			all = append(all, es...)
		}
	}
	if len(all) > 0 {
		return nil, nil, all
	}
	// How the generators reach the database is the spec's choice, not the landscape's.
	if s.ResultsDB != nil {
		db.Relay = s.ResultsDB.Relay
	}
	s.Landscape, s.ResultsDB = land, db
	text, err := withLandscape(data, node, landName, db.Relay)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return s, text, nil
}

// parseLandscapeOutput decodes the landscape output of a `tofu output -json` file, and
// returns it also as a node (the mapping with landscape and results_db).
func parseLandscapeOutput(name string, data []byte) (*Landscape, *ResultsDB, *yaml.Node, error) {
	d := &decoder{file: name}
	var land *Landscape
	var db *ResultsDB
	var node *yaml.Node
	root := d.document(data)
	if root == nil {
		return nil, nil, nil, d.errs.sorted()
	}
	top := value{node: root, pos: root}
	out, ok := d.child(top, LandscapeOutput, `has no output "landscape": write this file with `+"`tofu -chdir=terraform output -json > FILE`"+` after applying terraform/`)
	if ok {
		// Terraform prints each output as {"sensitive": …, "type": …, "value": …}.
		if val, ok := d.child(out, "value", `is not an output of "tofu output -json" (no value)`); ok {
			node = val.node
			d.object(val,
				required("landscape", d.landscape(&land)),
				required("results_db", d.resultsDB(&db)),
			)
		}
	}
	if len(d.errs) > 0 {
		return nil, nil, nil, d.errs.sorted()
	}
	return land, db, node, nil
}

// child returns the field key of the mapping v, ignoring its other fields, or reports
// missing at v.
func (d *decoder) child(v value, key, missing string) (value, bool) {
	if v.node.Kind != yaml.MappingNode {
		d.errorf(v, "must be a mapping, got %s", describe(v.node))
		return value{}, false
	}
	for _, p := range d.pairs(v.node, v.path, 0) {
		if p.key.Value == key && !isNull(p.val) {
			return value{node: p.val, pos: p.key, path: join(v.path, key)}, true
		}
	}
	d.errorf(v, "%s", missing)
	return value{}, false
}

// withLandscape returns the spec text data with its landscape: and results_db:
// sections replaced by land (the output's value node). A run stores this text, so that
// what re-reads the spec later (reports, collect-logs) finds the landscape the run used.
func withLandscape(data []byte, land *yaml.Node, from string, relay Relay) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	root := resolve(doc.Content[0])
	var kept []*yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		if k := root.Content[i].Value; k != "landscape" && k != "results_db" {
			kept = append(kept, root.Content[i], root.Content[i+1])
		}
	}
	for i := 0; i+1 < len(land.Content); i += 2 {
		k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: land.Content[i].Value}
		if i == 0 {
			k.HeadComment = "from the Terraform output " + from
		}
		v := block(land.Content[i+1])
		if k.Value == "results_db" && relay != RelayAuto && v.Kind == yaml.MappingNode {
			v.Content = append(v.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "relay"},
				&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: string(relay)})
		}
		kept = append(kept, k, v)
	}
	root.Content = kept
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	return b.Bytes(), enc.Close()
}

// block turns the JSON styles of n (flow mappings, quoted strings) into YAML's block
// style, for a readable stored spec.
func block(n *yaml.Node) *yaml.Node {
	c := *n
	if c.Kind == yaml.MappingNode || c.Kind == yaml.SequenceNode {
		c.Style = 0
		c.Content = make([]*yaml.Node, len(n.Content))
		for i, x := range n.Content {
			c.Content[i] = block(x)
		}
	} else if c.Kind == yaml.ScalarNode && c.Tag == "!!str" {
		c.Style = 0
	}
	return &c
}
