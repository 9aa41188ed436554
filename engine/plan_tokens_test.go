package engine

import (
	"encoding/base64"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/spec"
)

// jwt returns an unsigned JSON Web Token with the given claims (JSON).
func jwt(claims string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256","typ":"JWT"}`)) + "." + enc([]byte(claims)) + ".c2ln"
}

// A header whose token expires before the run's planned end is named with when; one
// that outlives it, or holds no token, is not.
func TestTokenWarnings(t *testing.T) {
	now := time.Date(2026, 12, 8, 2, 0, 0, 0, time.UTC)
	env := map[string]string{
		"SHORT":   "bearer " + jwt(`{"exp":`+strconv.FormatInt(now.Add(20*time.Minute).Unix(), 10)+`,"user_name":"admin"}`),
		"LONG":    jwt(`{"exp":` + strconv.FormatInt(now.Add(3*time.Hour).Unix(), 10) + `}`),
		"EXPIRED": "Bearer " + jwt(`{"exp":`+strconv.FormatInt(now.Add(-time.Minute).Unix(), 10)+`}`),
		"NOEXP":   "bearer " + jwt(`{"sub":"x"}`),
		"PLAIN":   "not.a-token at all",
	}
	lookup := func(name string) (string, bool) { v, ok := env[name]; return v, ok }
	sp := &spec.Spec{Workload: spec.Workload{Requests: []spec.Request{
		{Headers: map[string]string{"Authorization": "${SHORT}", "X-Long": "${LONG}", "X-Plain": "${PLAIN}"}},
		{Headers: map[string]string{"X-Expired": "${EXPIRED}", "X-Noexp": "${NOEXP}", "X-Unset": "${UNSET}"}},
	}}}
	got := tokenWarnings(sp, lookup, 45*time.Minute, now)
	if len(got) != 2 {
		t.Fatalf("warnings for a run of at least 45m: %q, want the token expiring in 20m and the expired one", got)
	}
	for i, want := range []string{
		"workload.requests[0].headers.Authorization: the token it sends (${SHORT}) expires at 02:20:00 UTC, in 20m0s, before the run ends (at least 45m0s under load)",
		"workload.requests[1].headers.X-Expired: the token it sends (${EXPIRED}) expired at 01:59:00 UTC, before the run ends",
	} {
		if !strings.HasPrefix(got[i], want) {
			t.Errorf("warning %d:\n%s\nwant it to begin\n%s", i, got[i], want)
		}
	}
	if got := tokenWarnings(sp, lookup, 10*time.Minute, now); len(got) != 1 || !strings.Contains(got[0], "X-Expired") {
		t.Errorf("warnings for a run of at least 10m: %q, want only the expired token's", got)
	}
}
