// Package decimal parses the unsigned decimal integers of wire formats (an HTTP
// Content-Length, an access log's status and byte counts) from bytes, without an
// allocation or a detour through strings, which the generator's and the log parsers'
// hot paths cannot afford.
package decimal

// Parse parses b as a non-negative decimal integer of 1 to 18 digits (so it cannot
// overflow an int64); ok is false for anything else, a sign or a space included.
func Parse(b []byte) (n int64, ok bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}
