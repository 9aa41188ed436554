package accesslog

import (
	"bytes"
	"encoding/json"
	"time"
)

// recordJSON is Record's JSON form. Its field order is the order of the keys in the
// output, and part of the format: add keys at the end of their group, never rename.
type recordJSON struct {
	Time               string            `json:"time"`
	Host               string            `json:"host,omitempty"`
	Method             string            `json:"method,omitempty"`
	URI                string            `json:"uri,omitempty"`
	Proto              string            `json:"proto,omitempty"`
	Status             int               `json:"status,omitempty"`
	BytesReceived      int64             `json:"bytes_received,omitempty"`
	BytesSent          int64             `json:"bytes_sent"`
	Referer            string            `json:"referer,omitempty"`
	UserAgent          string            `json:"user_agent,omitempty"`
	RemoteAddr         string            `json:"remote_addr,omitempty"`
	BackendAddr        string            `json:"backend_addr,omitempty"`
	XForwardedFor      string            `json:"x_forwarded_for,omitempty"`
	XForwardedProto    string            `json:"x_forwarded_proto,omitempty"`
	VcapRequestID      string            `json:"vcap_request_id,omitempty"`
	ResponseTime       *int64            `json:"response_time_us,omitempty"`
	GorouterTime       *int64            `json:"gorouter_time_us,omitempty"`
	AppID              string            `json:"app_id,omitempty"`
	AppIndex           *int              `json:"app_index,omitempty"`
	InstanceID         string            `json:"instance_id,omitempty"`
	RouterError        string            `json:"x_cf_routererror,omitempty"`
	B3TraceID          string            `json:"x_b3_traceid,omitempty"`
	B3SpanID           string            `json:"x_b3_spanid,omitempty"`
	B3ParentSpanID     string            `json:"x_b3_parentspanid,omitempty"`
	B3                 string            `json:"b3,omitempty"`
	BackendTime        *int64            `json:"backend_time_us,omitempty"`
	DialTime           *int64            `json:"dial_time_us,omitempty"`
	DNSTime            *int64            `json:"dns_time_us,omitempty"`
	TLSTime            *int64            `json:"tls_time_us,omitempty"`
	FailedAttempts     *int              `json:"failed_attempts,omitempty"`
	FailedAttemptsTime *int64            `json:"failed_attempts_time_us,omitempty"`
	LocalAddress       string            `json:"local_address,omitempty"`
	Extra              map[string]string `json:"extra,omitempty"`
}

// MarshalJSON writes r as one JSON object with snake_case keys in a fixed order:
//
//	{"time":"2024-03-18T09:12:44.118327461Z","host":"shop.example.com","method":"GET",
//	 "uri":"/cart","proto":"HTTP/1.1","status":200,"bytes_sent":1873,…,
//	 "response_time_us":21734,"gorouter_time_us":412,"app_id":"…","app_index":2,…,
//	 "extra":{"traceparent":"00-…"}}
//
// time is RFC 3339 with as many fraction digits as it needs, in the line's zone.
// Durations are whole microseconds (gorouter logs seconds with 6 decimals, so nothing
// is lost) in keys ending in _us. Keys are gorouter's own where it has one (app_index,
// x_cf_routererror, x_b3_traceid, …).
//
// A key is left out when the line did not say: strings that were absent or "-";
// keyed durations and numbers that are not in r.Present (so "app_index":0 and
// "response_time_us":0 are real values); status for "-" (no response was written);
// bytes_received when 0 (no request body, or an Apache format, which has no such
// field). time and bytes_sent are always there. extra is Record.Extra as an object,
// "-" values kept as written, left out when empty. Bytes that are not UTF-8 become
// U+FFFD.
func (r Record) MarshalJSON() ([]byte, error) {
	us := func(f Field, d time.Duration) *int64 {
		if !r.Has(f) {
			return nil
		}
		v := d.Microseconds()
		return &v
	}
	num := func(f Field, n int) *int {
		if !r.Has(f) {
			return nil
		}
		return &n
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	// Query strings are full of '&': leave escaping them to callers that want it
	// (json.Marshal does; an Encoder with SetEscapeHTML(false) does not).
	enc.SetEscapeHTML(false)
	err := enc.Encode(recordJSON{
		Time:               r.Time.Format(time.RFC3339Nano),
		Host:               r.Host,
		Method:             r.Method,
		URI:                r.URI,
		Proto:              r.Proto,
		Status:             r.Status,
		BytesReceived:      r.BytesReceived,
		BytesSent:          r.BytesSent,
		Referer:            r.Referer,
		UserAgent:          r.UserAgent,
		RemoteAddr:         r.RemoteAddr,
		BackendAddr:        r.BackendAddr,
		XForwardedFor:      r.XForwardedFor,
		XForwardedProto:    r.XForwardedProto,
		VcapRequestID:      r.VcapRequestID,
		ResponseTime:       us(FieldResponseTime, r.ResponseTime),
		GorouterTime:       us(FieldGorouterTime, r.GorouterTime),
		AppID:              r.AppID,
		AppIndex:           num(FieldAppIndex, r.AppIndex),
		InstanceID:         r.InstanceID,
		RouterError:        r.RouterError,
		B3TraceID:          r.B3TraceID,
		B3SpanID:           r.B3SpanID,
		B3ParentSpanID:     r.B3ParentSpanID,
		B3:                 r.B3,
		BackendTime:        us(FieldBackendTime, r.BackendTime),
		DialTime:           us(FieldDialTime, r.DialTime),
		DNSTime:            us(FieldDNSTime, r.DNSTime),
		TLSTime:            us(FieldTLSTime, r.TLSTime),
		FailedAttempts:     num(FieldFailedAttempts, r.FailedAttempts),
		FailedAttemptsTime: us(FieldFailedAttemptsTime, r.FailedAttemptsTime),
		LocalAddress:       r.LocalAddress,
		Extra:              r.Extra,
	})
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), err
}
