package elastic

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// pitAPI says which point-in-time API a server has.
type pitAPI int

const (
	unknownPIT pitAPI = iota // GET / refused: probe
	noPIT
	esPIT // POST /<index>/_pit, DELETE /_pit
	osPIT // POST /<index>/_search/point_in_time, DELETE /_search/point_in_time
)

// server is what GET / says about the cluster.
type server struct {
	distribution string // "elasticsearch", "opensearch", or "" when GET / was refused
	number       string
	version      [3]int
	probed       pitAPI // for an unknown server, what the first pull found
}

// at reports whether the version is at least v.
func (s *server) at(v ...int) bool {
	for i := range 3 {
		want := 0
		if i < len(v) {
			want = v[i]
		}
		if s.version[i] != want {
			return s.version[i] > want
		}
	}
	return true
}

// nanos reports whether the server sorts dates in nanoseconds when asked
// (numeric_type date_nanos) and reads strict_date_optional_time_nanos: Elasticsearch
// 7.0+ and every OpenSearch.
func (s *server) nanos() bool {
	return s.distribution != "elasticsearch" || s.at(7)
}

// pit says which point-in-time API the server has and whether it sorts on _shard_doc.
// OpenSearch has _shard_doc only from 3.3; it is paged by seeking everywhere.
func (s *server) pit() (pitAPI, bool) {
	switch s.distribution {
	case "elasticsearch":
		if s.at(7, 10) {
			return esPIT, s.at(7, 12)
		}
		return noPIT, false
	case "opensearch":
		if s.at(2, 4) {
			return osPIT, false
		}
		return noPIT, false
	}
	if s.probed != unknownPIT {
		return s.probed, false
	}
	return unknownPIT, false
}

// detect asks GET / once per Source what the server is. A refusal leaves it unknown
// (the pull then probes) unless the answer names Elasticsearch.
func (s *Source) detect(p *pull) (*server, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.server != nil {
		return s.server, nil
	}
	b, err := p.call(request{op: "server info", method: http.MethodGet, path: "/"})
	var re *ResponseError
	if errors.As(err, &re) {
		// Refused (a user without cluster privileges; a distribution without the
		// endpoint). Elasticsearch 7.14+ still says what it is in a header.
		s.server = &server{}
		if re.product == "Elasticsearch" {
			s.server = &server{distribution: "elasticsearch", number: "7.14+", version: [3]int{7, 14, 0}}
		}
		s.cfg.Logger.Debug("elastic: server info refused", "status", re.Status, "assumed", s.server.distribution)
		return s.server, nil
	}
	if err != nil {
		return nil, err
	}
	var info struct {
		Version struct {
			Number       string `json:"number"`
			Distribution string `json:"distribution"`
		} `json:"version"`
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return nil, fmt.Errorf("elastic: decode server info: %w", err)
	}
	srv := &server{distribution: "elasticsearch", number: info.Version.Number}
	if info.Version.Distribution == "opensearch" {
		srv.distribution = "opensearch"
	}
	for i, part := range strings.SplitN(strings.SplitN(srv.number, "-", 2)[0], ".", 3) {
		srv.version[i], _ = strconv.Atoi(part)
	}
	s.cfg.Logger.Debug("elastic: server", "distribution", srv.distribution, "version", srv.number)
	s.server = srv
	return srv, nil
}

func (s *Source) setProbed(a pitAPI) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.server.probed = a
}

// openPIT opens a point in time over the index patterns.
func (p *pull) openPIT(api pitAPI) (string, error) {
	ka := "keep_alive=" + keepAlive(p.cfg.KeepAlive)
	r := request{op: "open point in time", method: http.MethodPost}
	if api == esPIT {
		r.path = "/" + p.cfg.Index + "/_pit?" + ka
	} else {
		r.path = "/" + p.cfg.Index + "/_search/point_in_time?" + ka
	}
	b, err := p.call(r)
	if err != nil {
		return "", err
	}
	var v struct {
		ID    string `json:"id"`     // Elasticsearch
		PitID string `json:"pit_id"` // OpenSearch
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return "", fmt.Errorf("elastic: decode point in time: %w", err)
	}
	if v.ID == "" {
		v.ID = v.PitID
	}
	if v.ID == "" {
		return "", fmt.Errorf("elastic: open point in time: no id in %.200s", b)
	}
	return v.ID, nil
}

func (p *pull) closePIT(api pitAPI, id string) {
	if api == esPIT {
		b, _ := json.Marshal(map[string]any{"id": id})
		p.release(request{op: "close point in time", method: http.MethodDelete, path: "/_pit", body: b})
		return
	}
	b, _ := json.Marshal(map[string]any{"pit_id": []string{id}})
	p.release(request{op: "close point in time", method: http.MethodDelete, path: "/_search/point_in_time", body: b})
}
