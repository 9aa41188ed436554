package routerlogs

import (
	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/accesslog"
	"github.com/cf-benchmark/cf-benchmark/internal/sample"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// RouterRequest converts a parsed router line that carries a trace id of the run
// tagged tag: the B3 trace id gorouter logged, or the vcap_request_id it derived from
// it. appGUID and appName are the app's as the source knows them (the line's app_id
// when appGUID is empty). ok is false for a line of another client or run.
func RouterRequest(rec *accesslog.Record, appGUID, appName string, tag uint32) (r resultsdb.RouterRequest, ok bool) {
	id, err := sample.ParseTraceID(rec.B3TraceID)
	if err != nil {
		if id, err = sample.ParseTraceID(rec.VcapRequestID); err != nil {
			return resultsdb.RouterRequest{}, false
		}
	}
	if t, _, _ := id.Parts(); t != tag {
		return resultsdb.RouterRequest{}, false
	}
	r = resultsdb.RouterRequest{TraceID: id, At: rec.Time, AppGUID: appGUID, AppName: appName, Status: rec.Status, RouterError: rec.RouterError}
	if r.AppGUID == "" {
		r.AppGUID = rec.AppID
	}
	if rec.Has(accesslog.FieldAppIndex) {
		idx := rec.AppIndex
		r.AppIndex = &idx
	}
	if rec.Has(accesslog.FieldResponseTime) {
		d := rec.ResponseTime
		r.ResponseTime = &d
	}
	if rec.Has(accesslog.FieldGorouterTime) {
		d := rec.GorouterTime
		r.GorouterTime = &d
	}
	return r, true
}
