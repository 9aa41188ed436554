package listenaddr

import "testing"

func TestParseKeepsToThisMachineUnlessAnInterfaceIsNamed(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{"", "127.0.0.1:0", ""},
		{"8080", "127.0.0.1:8080", ""},
		{":8080", "127.0.0.1:8080", ""},
		{"0.0.0.0:8080", "0.0.0.0:8080", ""},
		{"[::1]:0", "[::1]:0", ""},
		{"localhost:x", "", `address "localhost:x": bad port "x"`},
		{"a:b:c", "", `address "a:b:c": want HOST:PORT, :PORT or PORT`},
	} {
		got, err := Parse(c.in)
		if got != c.want || (err == nil) != (c.err == "") || (err != nil && err.Error() != c.err) {
			t.Errorf("Parse(%q) = %q, %v; want %q, %q", c.in, got, err, c.want, c.err)
		}
	}
}
