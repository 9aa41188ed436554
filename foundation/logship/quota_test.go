package logship

import (
	"fmt"
	"testing"
)

func TestParseQuota(t *testing.T) {
	for in, want := range map[string]string{"": "0 0s", "1000/1h": "1000 1h0m0s", "5/15m": "5 15m0s"} {
		n, w, err := ParseQuota(in)
		if got := fmt.Sprintf("%d %v", n, w); err != nil || got != want {
			t.Errorf("ParseQuota(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"1000", "x/1h", "0/1h", "5/forever", "5/-1h"} {
		if _, _, err := ParseQuota(bad); err == nil {
			t.Errorf("ParseQuota(%q) accepted it", bad)
		}
	}
}
