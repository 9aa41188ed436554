package cc

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Metadata: the labels and annotations of orgs, spaces, apps, routes, domains and
// isolation segments (cf set-label, unset-label, labels, and the --labels filters of the
// list commands), with CC's key and value rules and its label_selector grammar.

// Metadata is a resource's labels and annotations.
type Metadata struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

func (m Metadata) render() obj {
	labels, annotations := obj{}, obj{}
	for k, v := range m.Labels {
		labels[k] = v
	}
	for k, v := range m.Annotations {
		annotations[k] = v
	}
	return obj{"labels": labels, "annotations": annotations}
}

// metadataPatch is the metadata of a create or update request: a null value removes
// its key.
type metadataPatch struct {
	Labels      map[string]*string `json:"labels"`
	Annotations map[string]*string `json:"annotations"`
}

// CC's limits (MetadataValidatorHelper).
const (
	maxMetadataKey        = 63
	maxMetadataPrefix     = 253
	maxLabelValue         = 63
	maxAnnotationValue    = 5000
	reservedMetadataScope = "cloudfoundry.org"
)

var (
	metadataInvalidChar = regexp.MustCompile(`[^\w\-.]`)
	metadataStartEnd    = regexp.MustCompile(`^[a-zA-Z\d](.*[a-zA-Z\d])?$`)
	dnsPrefix           = regexp.MustCompile(`^(([a-z\d]|[a-z\d][a-z\d-]*[a-z\d])\.)*([a-z\d]|[a-z\d][a-z\d-]*[a-z\d])$`)
)

// metadataKeyError is CC's complaint about a label or annotation key, "" when valid.
func metadataKeyError(key string) string {
	if key == "" {
		return "key cannot be empty string"
	}
	if strings.Count(key, "/") > 1 {
		return "key has more than one '/'"
	}
	name := key
	if prefix, n, ok := strings.Cut(key, "/"); ok {
		switch {
		case !dnsPrefix.MatchString(strings.ToLower(prefix)):
			return fmt.Sprintf("prefix '%s' must be in valid dns format", prefix)
		case len(prefix) > maxMetadataPrefix:
			return fmt.Sprintf("prefix '%s...' is greater than %d characters", prefix[:8], maxMetadataPrefix)
		case strings.EqualFold(prefix, reservedMetadataScope):
			return "prefix 'cloudfoundry.org' is reserved"
		}
		name = n
	}
	return metadataWordError(name, maxMetadataKey, "key cannot be empty string")
}

// metadataWordError checks a key's name or a label's value.
func metadataWordError(s string, max int, empty string) string {
	switch {
	case s == "":
		return empty
	case metadataInvalidChar.MatchString(s):
		return fmt.Sprintf("'%s' contains invalid characters", s)
	case !metadataStartEnd.MatchString(s):
		return fmt.Sprintf("'%s' starts or ends with invalid characters", s)
	case len(s) > max:
		return fmt.Sprintf("'%s...' is greater than %d characters", s[:8], max)
	}
	return ""
}

// validate returns CC's 422 for the first bad key or value of p (nil: none).
func (p *metadataPatch) validate() error {
	if p == nil {
		return nil
	}
	for k, v := range p.Labels {
		if e := metadataKeyError(k); e != "" {
			return unprocessable("Metadata label key error: %s", e)
		}
		if v != nil {
			if e := metadataWordError(*v, maxLabelValue, ""); e != "" {
				return unprocessable("Metadata label value error: %s", e)
			}
		}
	}
	for k, v := range p.Annotations {
		if e := metadataKeyError(k); e != "" {
			return unprocessable("Metadata annotation key error: %s", e)
		}
		if v != nil && len(*v) > maxAnnotationValue {
			return unprocessable("Metadata annotation value error: '%s...' is greater than %d characters", (*v)[:8], maxAnnotationValue)
		}
	}
	return nil
}

// apply merges p into m (validated before: see validate).
func (m *Metadata) apply(p *metadataPatch) {
	if p == nil {
		return
	}
	m.Labels = mergeMetadata(m.Labels, p.Labels)
	m.Annotations = mergeMetadata(m.Annotations, p.Annotations)
}

// mergeMetadata returns a new map (rendered copies may share the old one).
func mergeMetadata(old map[string]string, patch map[string]*string) map[string]string {
	if len(patch) == 0 {
		return old
	}
	out := make(map[string]string, len(old)+len(patch))
	for k, v := range old {
		out[k] = v
	}
	for k, v := range patch {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = *v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// A labelRequirement is one term of a label_selector.
type labelRequirement struct {
	key    string
	op     string // exists, !exists, =, !=, in, notin
	values []string
}

func (r labelRequirement) matches(labels map[string]string) bool {
	v, ok := labels[r.key]
	switch r.op {
	case "exists":
		return ok
	case "!exists":
		return !ok
	case "=", "in":
		return ok && slices.Contains(r.values, v)
	default: // != and notin: also the resources without the key, as on CC
		return !ok || !slices.Contains(r.values, v)
	}
}

var (
	selectorSet   = regexp.MustCompile(`^(\S+?)\s+(in|notin)\s+\(([^()]*)\)$`)
	selectorEqual = regexp.MustCompile(`^([^=!\s]+)\s*(==|=|!=)\s*([^=!\s]*)$`)
)

// parseLabelSelector parses CC's label_selector: comma-separated requirements, each
// key, !key, key=value, key==value, key!=value, key in (v1,v2) or key notin (v1,v2).
func parseLabelSelector(sel string) ([]labelRequirement, error) {
	invalid := badQuery("The query parameter is invalid: Invalid label_selector value")
	if strings.TrimSpace(sel) == "" {
		return nil, badQuery("The query parameter is invalid: Missing label_selector value")
	}
	var reqs []labelRequirement
	for _, term := range splitSelector(sel) {
		term = strings.TrimSpace(term)
		var r labelRequirement
		if m := selectorSet.FindStringSubmatch(term); m != nil {
			r = labelRequirement{key: m[1], op: m[2]}
			for _, v := range strings.Split(m[3], ",") {
				r.values = append(r.values, strings.TrimSpace(v))
			}
		} else if m := selectorEqual.FindStringSubmatch(term); m != nil {
			op := m[2]
			if op == "==" {
				op = "="
			}
			r = labelRequirement{key: m[1], op: op, values: []string{m[3]}}
		} else if key, ok := strings.CutPrefix(term, "!"); ok {
			r = labelRequirement{key: key, op: "!exists"}
		} else {
			r = labelRequirement{key: term, op: "exists"}
		}
		if r.key == "" || strings.ContainsAny(r.key, " \t()") {
			return nil, invalid
		}
		if e := metadataKeyError(r.key); e != "" {
			return nil, badQuery("The query parameter is invalid: %s", e)
		}
		for _, v := range r.values {
			if e := metadataWordError(v, maxLabelValue, ""); e != "" {
				return nil, invalid
			}
		}
		if (r.op == "in" || r.op == "notin") && len(r.values) == 1 && r.values[0] == "" {
			return nil, invalid
		}
		reqs = append(reqs, r)
	}
	return reqs, nil
}

// splitSelector splits on the commas outside parentheses; an unbalanced
// parenthesis leaves a term that no requirement form matches.
func splitSelector(sel string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range sel {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, sel[start:i])
				start = i + 1
			}
		}
	}
	return append(out, sel[start:])
}

// labels reports whether m passes the request's label_selector (none: always).
func (q *query) labels(m Metadata) bool {
	for _, r := range q.selector {
		if !r.matches(m.Labels) {
			return false
		}
	}
	return true
}

func (s *Server) metadataRoutes() {
	s.handle("PATCH /v3/organizations/{guid}", s.updateOrg)
	s.handle("PATCH /v3/spaces/{guid}", s.updateSpace)
	s.handle("PATCH /v3/routes/{guid}", s.updateRoute)
	s.handle("PATCH /v3/domains/{guid}", s.updateDomain)
	s.handle("PATCH /v3/isolation_segments/{guid}", s.updateSegment)
}

// updateBody is the body of PATCH on an org, a space, a route, a domain or an isolation
// segment: a new name (orgs, spaces and segments: cf rename-org, rename-space) and
// metadata.
type updateBody struct {
	Name     *string        `json:"name"`
	Metadata *metadataPatch `json:"metadata"`
}

func (c *call) decodeUpdate() (updateBody, error) {
	var body updateBody
	if err := c.decode(&body); err != nil {
		return body, err
	}
	if body.Name != nil && *body.Name == "" {
		return body, unprocessable("Name can't be blank")
	}
	return body, body.Metadata.validate()
}

func (s *Server) updateOrg(c *call) error {
	body, err := c.decodeUpdate()
	if err != nil {
		return err
	}
	return c.change(http.StatusOK, func(st *State) (any, error) {
		o := st.Orgs[c.r.PathValue("guid")]
		if o == nil {
			return nil, notFound("Organization")
		}
		if body.Name != nil && *body.Name != o.Name {
			if st.orgByName(*body.Name) != nil {
				return nil, unprocessable("Organization name '%s' is already taken.", *body.Name)
			}
			o.Name = *body.Name
		}
		o.Metadata.apply(body.Metadata)
		o.Updated = time.Now().UTC()
		return s.renderOrg(o), nil
	})
}

func (s *Server) updateSpace(c *call) error {
	body, err := c.decodeUpdate()
	if err != nil {
		return err
	}
	return c.change(http.StatusOK, func(st *State) (any, error) {
		sp := st.Spaces[c.r.PathValue("guid")]
		if sp == nil {
			return nil, notFound("Space")
		}
		if body.Name != nil && *body.Name != sp.Name {
			if st.spaceByName(sp.OrgGUID, *body.Name) != nil {
				return nil, unprocessable("Name must be unique per organization")
			}
			sp.Name = *body.Name
		}
		sp.Metadata.apply(body.Metadata)
		sp.Updated = time.Now().UTC()
		return s.renderSpace(sp), nil
	})
}

func (s *Server) updateRoute(c *call) error {
	body, err := c.decodeUpdate()
	if err != nil {
		return err
	}
	return c.change(http.StatusOK, func(st *State) (any, error) {
		r := st.Routes[c.r.PathValue("guid")]
		if r == nil {
			return nil, notFound("Route")
		}
		r.Metadata.apply(body.Metadata)
		r.Updated = time.Now().UTC()
		return s.renderRoute(clone(r), st.routeURL(r)), nil
	})
}

func (s *Server) updateDomain(c *call) error {
	body, err := c.decodeUpdate()
	if err != nil {
		return err
	}
	return c.change(http.StatusOK, func(st *State) (any, error) {
		d := st.Domains[c.r.PathValue("guid")]
		if d == nil {
			return nil, notFound("Domain")
		}
		d.Metadata.apply(body.Metadata)
		return s.renderDomain(d), nil
	})
}

func (s *Server) updateSegment(c *call) error {
	body, err := c.decodeUpdate()
	if err != nil {
		return err
	}
	return c.change(http.StatusOK, func(st *State) (any, error) {
		seg := st.IsolationSegments[c.r.PathValue("guid")]
		if seg == nil {
			return nil, notFound("Isolation segment")
		}
		if body.Name != nil && *body.Name != seg.Name {
			if st.segmentByName(*body.Name) != nil {
				return nil, unprocessable("Name must be unique")
			}
			seg.Name = *body.Name
		}
		seg.Metadata.apply(body.Metadata)
		seg.Updated = time.Now().UTC()
		return s.renderSegment(seg), nil
	})
}
