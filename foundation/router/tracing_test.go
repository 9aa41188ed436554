package router

import (
	"net/http"
	"strings"
	"testing"
)

func TestApplyTracing(t *testing.T) {
	t.Parallel()
	const random = "random" // want a fresh gouuid v4, not derived from the trace
	tests := []struct {
		name    string
		in      http.Header
		wantID  string            // request id, or random
		want    map[string]string // headers after tracing; "" = absent
		newSpan bool              // a new trace was generated: B3 headers follow the id
	}{
		{name: "no tracing headers, client request id overwritten", in: http.Header{"X-Vcap-Request-Id": {"client"}},
			wantID: random, newSpan: true},
		{name: "128-bit trace with version digit 4", in: http.Header{
			"X-B3-Traceid": {"4bf92f3577b34da6a3ce929d0e0e4736"}, "X-B3-Spanid": {"00f067aa0ba902b7"}},
			wantID: "4bf92f35-77b3-4da6-a3ce-929d0e0e4736",
			want: map[string]string{"X-B3-Traceid": "4bf92f3577b34da6a3ce929d0e0e4736",
				"B3": "4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7"}},
		{name: "uppercase trace id is lowercased", in: http.Header{
			"X-B3-Traceid": {"4BF92F3577B34DA6A3CE929D0E0E4736"}, "X-B3-Spanid": {"00F067AA0BA902B7"}},
			wantID: "4bf92f35-77b3-4da6-a3ce-929d0e0e4736",
			want:   map[string]string{"X-B3-Traceid": "4BF92F3577B34DA6A3CE929D0E0E4736", "B3": "4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7"}},
		{name: "version digit 0 is no UUID for gouuid", in: http.Header{
			"X-B3-Traceid": {"deadbeef0000000100000000000000ff"}, "X-B3-Spanid": {"0000000000000001"}},
			wantID: random, want: map[string]string{"B3": "deadbeef0000000100000000000000ff-0000000000000001"}},
		{name: "version digit 6 is no UUID for gouuid", in: http.Header{
			"X-B3-Traceid": {"4bf92f3577b36da6a3ce929d0e0e4736"}, "X-B3-Spanid": {"1"}},
			wantID: random},
		{name: "20-digit trace id is left-padded to 32", in: http.Header{
			"X-B3-Traceid": {"1234567890abcdef1234"}, "X-B3-Spanid": {"1"}},
			wantID: "00000000-0000-1234-5678-90abcdef1234",
			want:   map[string]string{"B3": "0000000000001234567890abcdef1234-0000000000000001"}},
		{name: "17-digit trace id pads to version digit 0", in: http.Header{
			"X-B3-Traceid": {"3000000000000abcd"}, "X-B3-Spanid": {"1"}},
			wantID: random, want: map[string]string{"B3": "0000000000000003000000000000abcd-0000000000000001"}},
		{name: "32 digits with zero high half become 16", in: http.Header{
			"X-B3-Traceid": {"0000000000000000a3ce929d0e0e4736"}, "X-B3-Spanid": {"1"}},
			wantID: random, want: map[string]string{"B3": "a3ce929d0e0e4736-0000000000000001"}},
		{name: "64-bit trace id", in: http.Header{"X-B3-Traceid": {"463ac35c9f6413ad"}, "X-B3-Spanid": {"72485a3953bb6124"}},
			wantID: random, want: map[string]string{"X-B3-Traceid": "463ac35c9f6413ad", "B3": "463ac35c9f6413ad-72485a3953bb6124"}},
		{name: "trace id without span id is replaced", in: http.Header{"X-B3-Traceid": {"4bf92f3577b34da6a3ce929d0e0e4736"}},
			wantID: random, newSpan: true},
		{name: "unparsable B3 headers are passed on, id random", in: http.Header{
			"X-B3-Traceid": {"not-hex"}, "X-B3-Spanid": {"1"}},
			wantID: random, want: map[string]string{"X-B3-Traceid": "not-hex", "B3": ""}},
		{name: "bad sampled flag makes B3 unparsable", in: http.Header{
			"X-B3-Traceid": {"4bf92f3577b34da6a3ce929d0e0e4736"}, "X-B3-Spanid": {"1"}, "X-B3-Sampled": {"yes"}},
			wantID: random, want: map[string]string{"B3": ""}},
		{name: "debug flag", in: http.Header{
			"X-B3-Traceid": {"4bf92f3577b34da6a3ce929d0e0e4736"}, "X-B3-Spanid": {"1"}, "X-B3-Sampled": {"0"}, "X-B3-Flags": {"1"}},
			wantID: "4bf92f35-77b3-4da6-a3ce-929d0e0e4736",
			want:   map[string]string{"B3": "4bf92f3577b34da6a3ce929d0e0e4736-0000000000000001-d"}},
		{name: "b3 single header kept as is", in: http.Header{"B3": {"4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1"}},
			wantID: "4bf92f35-77b3-4da6-a3ce-929d0e0e4736",
			want:   map[string]string{"B3": "4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1", "X-B3-Traceid": ""}},
		{name: "b3 single header with parent", in: http.Header{"B3": {"4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0-00000000000000aa"}},
			wantID: "4bf92f35-77b3-4da6-a3ce-929d0e0e4736"},
		{name: "b3 single 64-bit", in: http.Header{"B3": {"a3ce929d0e0e4736-00f067aa0ba902b7"}}, wantID: random},
		{name: "b3 sampling only", in: http.Header{"B3": {"0"}}, wantID: random, want: map[string]string{"B3": "0", "X-B3-Traceid": ""}},
		{name: "bad b3 falls back to X-B3 headers", in: http.Header{"B3": {"nonsense"},
			"X-B3-Traceid": {"4bf92f3577b34da6a3ce929d0e0e4736"}, "X-B3-Spanid": {"1"}},
			wantID: "4bf92f35-77b3-4da6-a3ce-929d0e0e4736", want: map[string]string{"B3": "4bf92f3577b34da6a3ce929d0e0e4736-0000000000000001"}},
		{name: "bad b3 alone starts a new trace", in: http.Header{"B3": {"nonsense"}}, wantID: random, newSpan: true},
		{name: "short b3 after 128-bit trace", in: http.Header{"B3": {"4bf92f3577b34da6a3ce929d0e0e4736-00f067"}}, wantID: random, newSpan: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.in.Clone()
			ex := &exchange{}
			ex.applyTracing(h)
			id := h.Get("X-Vcap-Request-Id")
			if tc.wantID == random {
				trace := strings.ToLower(tc.in.Get("X-B3-Traceid"))
				if !gouuidV4.MatchString(id) || (trace != "" && strings.Contains(strings.ReplaceAll(id, "-", ""), trace)) {
					t.Errorf("request id %q, want a random gouuid v4", id)
				}
			} else if id != tc.wantID {
				t.Errorf("request id %q, want %q", id, tc.wantID)
			}
			for k, v := range tc.want {
				if got := h.Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			if tc.newSpan {
				trace := strings.ReplaceAll(id, "-", "")
				if h.Get("X-B3-Traceid") != trace || h.Get("X-B3-Spanid") != trace[16:] || h.Get("B3") != trace+"-"+trace[16:] {
					t.Errorf("new trace headers %q %q %q do not follow id %q", h.Get("X-B3-Traceid"), h.Get("X-B3-Spanid"), h.Get("B3"), id)
				}
			}
		})
	}
}

func TestNewUUIDIsGouuidV4(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 1000 {
		id := newUUID()
		if !gouuidV4.MatchString(id) || seen[id] {
			t.Fatalf("newUUID() = %q: not a fresh gouuid v4", id)
		}
		seen[id] = true
	}
}

func TestParseAppInstance(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		guid    string
		idx     int
		ok      bool
		idxText string
	}{
		{in: appGUID + ":0", guid: appGUID, idx: 0, ok: true, idxText: "0"},
		{in: appGUID + ":12", guid: appGUID, idx: 12, ok: true, idxText: "12"},
		{in: appGUID + ":012", guid: appGUID, idx: -1, ok: true, idxText: "012"},
		{in: appGUID + ":99999999999999999999999", guid: appGUID, idx: -1, ok: true, idxText: "99999999999999999999999"},
		{in: appGUID + ":", ok: false},
		{in: appGUID + ":-1", ok: false},
		{in: appGUID + ":1 ", ok: false},
		{in: appGUID, ok: false},
		{in: strings.ToUpper(appGUID) + ":1", ok: false},
		{in: strings.Replace(appGUID, "-", "x", 1) + ":1", ok: false},
		{in: "g" + appGUID[1:] + ":1", ok: false},
	}
	for _, tc := range tests {
		guid, idxText, idx, ok := parseAppInstance(tc.in)
		if ok != tc.ok || (ok && (guid != tc.guid || idx != tc.idx || idxText != tc.idxText)) {
			t.Errorf("parseAppInstance(%q) = %q, %q, %d, %v", tc.in, guid, idxText, idx, ok)
		}
	}
}
