package routerlogs

import (
	"encoding/json"
	"errors"
	"testing"
	"time"
)

func TestCursorJSON(t *testing.T) {
	type state struct {
		Source string `json:"source"`
		N      int    `json:"n"`
	}
	c, err := NewCursor(state{Source: "test", N: 7})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	// A jsonb column reorders and respaces; the cursor must survive that.
	var back Cursor
	if err := json.Unmarshal([]byte(` { "n" : 7, "source" : "test" } `), &back); err != nil {
		t.Fatal(err)
	}
	var s state
	if ok, err := back.Decode("test", &s); !ok || err != nil || s.N != 7 {
		t.Fatalf("Decode of %s = %v, %v, %+v", b, ok, err, s)
	}
	if _, err := back.Decode("other", &s); !errors.Is(err, ErrCursorMismatch) {
		t.Errorf("Decode by another source = %v, want ErrCursorMismatch", err)
	}

	for _, zero := range []string{`{}`, `null`, ` {} `} {
		var z Cursor
		if err := json.Unmarshal([]byte(zero), &z); err != nil || !z.IsZero() {
			t.Errorf("%s: %v, zero %v", zero, err, z.IsZero())
		}
		if ok, err := z.Decode("test", &s); ok || err != nil {
			t.Errorf("Decode of the zero cursor = %v, %v", ok, err)
		}
	}
	if b, _ := json.Marshal(Cursor{}); string(b) != "{}" {
		t.Errorf("zero cursor marshals to %s, want {}", b)
	}
	for _, bad := range []string{`[1]`, `"x"`, `{`} {
		var c Cursor
		if err := json.Unmarshal([]byte(bad), &c); err == nil {
			t.Errorf("%s accepted as a cursor", bad)
		}
	}
	// Inside a struct, as callers store it.
	var wrap struct{ C Cursor }
	if err := json.Unmarshal([]byte(`{"C":{"source":"test","n":1}}`), &wrap); err != nil || wrap.C.IsZero() {
		t.Errorf("embedded cursor: %v %v", err, wrap.C)
	}
}

func TestQueryMatches(t *testing.T) {
	from := time.Date(2024, 3, 18, 23, 50, 0, 0, time.UTC)
	q := Query{From: from, To: from.Add(time.Minute), Apps: []string{"shop", "guid-2"}}
	for _, c := range []struct {
		at   time.Time
		want bool
	}{
		{from, true}, {from.Add(time.Minute), true}, {from.Add(-time.Nanosecond), false},
		{from.Add(time.Minute + time.Nanosecond), false},
	} {
		if got := q.InWindow(c.at); got != c.want {
			t.Errorf("InWindow(%v) = %v", c.at, got)
		}
	}
	if !(Query{}).InWindow(time.Time{}) || !(&Query{From: from}).InWindow(from.Add(1000*time.Hour)) {
		t.Error("open ends do not bound")
	}
	for _, c := range []struct {
		name, guid string
		want       bool
	}{{"shop", "", true}, {"", "guid-2", true}, {"cart", "guid-3", false}, {"", "", false}} {
		if got := q.WantsApp(c.name, c.guid); got != c.want {
			t.Errorf("WantsApp(%q, %q) = %v", c.name, c.guid, got)
		}
	}
	if !(&Query{}).WantsApp("", "") {
		t.Error("a query without apps refuses an app")
	}
}

func FuzzCursorUnmarshal(f *testing.F) {
	for _, s := range []string{`{}`, `null`, `{"source":"elasticsearch","ts":"1","seen":["i/1"]}`, `[`, `1`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var c Cursor
		if err := json.Unmarshal(b, &c); err != nil {
			return
		}
		out, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("%q: marshal: %v", b, err)
		}
		var again Cursor
		if err := json.Unmarshal(out, &again); err != nil || again.IsZero() != c.IsZero() {
			t.Fatalf("%q → %s: %v", b, out, err)
		}
	})
}
