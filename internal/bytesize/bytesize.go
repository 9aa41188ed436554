// Package bytesize parses the sizes Cloud Foundry manifests carry (memory, disk_quota,
// log-rate-limit-per-second): a decimal number and a binary unit, as the Cloud
// Controller and the cf CLI read them: 256M, 1G, 512MB, 1.5G, 2048K.
package bytesize

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ErrInvalid is what every error Megabytes returns matches (errors.Is); their text
// names the input and the units.
var ErrInvalid = errors.New("invalid size")

// invalidError is an error of Megabytes: its own message, matching ErrInvalid.
type invalidError struct{ msg string }

func (e *invalidError) Error() string        { return e.msg }
func (e *invalidError) Is(target error) bool { return target == ErrInvalid }

// MaxMegabytes is the largest size Megabytes accepts (about 2 PB): larger ones are
// typing mistakes, and every result fits an int32.
const MaxMegabytes = math.MaxInt32

// units are the suffixes, upper case, and their size in MB (1 M = 1024 K = 1024² B).
var units = map[string]float64{
	"B": 1.0 / (1 << 20),
	"K": 1.0 / (1 << 10), "KB": 1.0 / (1 << 10), "KIB": 1.0 / (1 << 10),
	"M": 1, "MB": 1, "MIB": 1,
	"G": 1 << 10, "GB": 1 << 10, "GIB": 1 << 10,
	"T": 1 << 20, "TB": 1 << 20, "TIB": 1 << 20,
}

// Megabytes parses s (surrounding space and letter case ignored) into whole MB,
// rounding down but to at least 1: a number of digits with an optional fraction
// (no sign, exponent or inner space), then a unit: B, K, KB, M, MB, G, GB, T or TB
// (KiB, MiB, GiB and TiB too, as the cf CLI allows). A zero size is an error.
func Megabytes(s string) (int, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	end := digits(u, 0)
	if end == 0 {
		return 0, invalid(s)
	}
	if end < len(u) && u[end] == '.' {
		frac := digits(u, end+1)
		if frac == end+1 { // "1." or "1.M": no digit after the point
			return 0, invalid(s)
		}
		end = frac
	}
	mb, ok := units[u[end:]]
	if !ok {
		return 0, invalid(s)
	}
	n, err := strconv.ParseFloat(u[:end], 64)
	if err != nil || n <= 0 {
		return 0, invalid(s)
	}
	size := n * mb
	if size > MaxMegabytes {
		return 0, &invalidError{fmt.Sprintf("want a size of at most %d MB, got %q", MaxMegabytes, s)}
	}
	return max(1, int(size)), nil
}

// digits returns the index of the first non-digit in s at or after i.
func digits(s string, i int) int {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

func invalid(s string) error {
	return &invalidError{fmt.Sprintf("want a size with a unit (B, K, KB, M, MB, G, GB, T or TB), like 256M, got %q", s)}
}
