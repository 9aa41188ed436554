package engine

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/cf-benchmark/cf-benchmark/spec"
)

// tokenWarnings are the header values (after ${NAME} expansion with lookup) that carry
// a JWT expiring before a run of at least under from now could end. Each generator
// sends the value it got when it started, so after then an app that checks the token
// refuses the requests, and the run counts them as errors: a cf login's token
// (${CF_OAUTH_TOKEN}) lives 20 minutes on a foundation deployed with cf-deployment (its
// UAA client cf: access-token-validity 1200).
func tokenWarnings(sp *spec.Spec, lookup func(string) (string, bool), under time.Duration, now time.Time) []string {
	var out []string
	eachHeader(sp, func(i int, name, written string) {
		val, err := spec.ExpandHeader(written, lookup)
		if err != nil {
			return // Preflight refuses it
		}
		exp, ok := jwtExpiry(val)
		if !ok || exp.After(now.Add(under)) {
			return
		}
		when := fmt.Sprintf("expires at %s, in %s", exp.UTC().Format("15:04:05 UTC"), exp.Sub(now).Round(time.Second))
		if !exp.After(now) {
			when = fmt.Sprintf("expired at %s", exp.UTC().Format("15:04:05 UTC"))
		}
		out = append(out, fmt.Sprintf("workload.requests[%d].headers.%s: the token it sends (%s) %s, before the run ends (at least %s under load): "+
			"an app that checks it refuses the requests after then, counted as errors. Try: a token that outlives the run",
			i, name, written, when, under))
	})
	return out
}

// jwtExpiry is the expiry ("exp") of the JSON Web Token in a header value ("bearer
// <JWT>" or the token alone); false when it holds none.
func jwtExpiry(val string) (time.Time, bool) {
	for _, field := range strings.Fields(val) {
		parts := strings.Split(field, ".")
		if len(parts) != 3 {
			continue
		}
		payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
		if err != nil {
			continue
		}
		var claims struct {
			Exp *json.Number `json:"exp"`
		}
		if json.Unmarshal(payload, &claims) != nil || claims.Exp == nil {
			continue
		}
		secs, err := claims.Exp.Float64()
		if err != nil || secs <= 0 {
			continue
		}
		return time.Unix(int64(secs), 0), true
	}
	return time.Time{}, false
}
