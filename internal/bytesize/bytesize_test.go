package bytesize

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

func TestMegabytes(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int // 0: an error
	}{
		{"256M", 256}, {"256MB", 256}, {"256mb", 256}, {"256MiB", 256}, {" 1G ", 1024}, {"1GB", 1024},
		{"1gib", 1024}, {"1.5g", 1536}, {"0.5G", 512}, {"2048K", 2}, {"2048KB", 2}, {"1T", 1 << 20},
		{"1TB", 1 << 20}, {"100B", 1}, {"1K", 1}, {"1048576B", 1}, {"3145728B", 3}, {"1.9M", 1},
		{"007M", 7}, {"2047T", 2047 << 20},
		// Errors: no unit, no number, signs, exponents, specials, inner space, zero,
		// unknown units, too large.
		{"256", 0}, {"M", 0}, {"", 0}, {"  ", 0}, {"-1G", 0}, {"+1G", 0}, {"lots", 0},
		{"1e3M", 0}, {"1E3", 0}, {"0x10M", 0}, {"NaNM", 0}, {"InfG", 0}, {"1 G", 0}, {"1.M", 0},
		{".5G", 0}, {"1..5G", 0}, {"1.5.5G", 0}, {"0M", 0}, {"0.0G", 0}, {"1P", 0},
		{"1PB", 0}, {"1MBB", 0}, {"1IB", 0}, {"1_000M", 0}, {"2048T", 0},
		{"99999999999999999999999999999999999999999T", 0}, {"1GB\x00", 0}, {"１G", 0},
	} {
		got, err := Megabytes(c.in)
		if got != c.want || (err != nil) != (c.want == 0) {
			t.Errorf("Megabytes(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("Megabytes(%q): %v does not wrap ErrInvalid", c.in, err)
		}
	}
}

func TestErrorNamesTheInputAndTheUnits(t *testing.T) {
	_, err := Megabytes("lots")
	if err == nil || !strings.Contains(err.Error(), `"lots"`) || !strings.Contains(err.Error(), "B, K, KB, M, MB, G, GB, T or TB") {
		t.Errorf("err = %v", err)
	}
}

// FuzzMegabytes: sizes come from manifests, outside input. Parsing never panics, an
// accepted size is within [1, MaxMegabytes], and a whole number of MB reads back as
// itself in every spelling of the unit.
func FuzzMegabytes(f *testing.F) {
	for _, s := range []string{"256M", "1.5g", "2048K", "100B", "1T", "-1G", "1e3M", "", "1 G", "999999999999T"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		mb, err := Megabytes(s)
		if err != nil {
			if mb != 0 || !errors.Is(err, ErrInvalid) {
				t.Fatalf("Megabytes(%q) = %d, %v", s, mb, err)
			}
			return
		}
		if mb < 1 || mb > MaxMegabytes {
			t.Fatalf("Megabytes(%q) = %d, outside [1, %d]", s, mb, MaxMegabytes)
		}
		for _, unit := range []string{"M", "mb", "MiB"} {
			again, err := Megabytes(strconv.Itoa(mb) + unit)
			if err != nil || again != mb {
				t.Fatalf("Megabytes(%q) = %d, but Megabytes(%d%s) = %d, %v", s, mb, mb, unit, again, err)
			}
		}
	})
}
