package accesslog

import (
	"bytes"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cf-benchmark/cf-benchmark/internal/decimal"
)

// lexer walks a line left to right; every failure is a *ParseError at its position.
type lexer struct {
	format string
	line   []byte // the line as given, for columns
	pos    int
	// unclosed is where the content of a quoted value that never closed began (0:
	// none). A value starting later cannot close either (a scan from unclosed passes
	// its start in step), so tolerant parsers that retry stay linear on bad lines.
	unclosed int
}

func newLexer(format string, line []byte) *lexer {
	// A trailing newline (a CR before it, stray blanks) belongs to the transport.
	line = bytes.TrimRight(line, " \t\r\n")
	return &lexer{format: format, line: line}
}

func (l *lexer) rest() []byte { return l.line[l.pos:] }
func (l *lexer) eol() bool    { return l.pos >= len(l.line) }

func (l *lexer) errAt(pos int, expected string) error {
	if pos > len(l.line) {
		pos = len(l.line)
	}
	return &ParseError{Format: l.format, Column: pos + 1, Expected: expected, Found: excerpt(l.line[pos:])}
}

func (l *lexer) fail(expected string) error { return l.errAt(l.pos, expected) }

// lit consumes s or fails expecting what.
func (l *lexer) lit(s, what string) error {
	if !bytes.HasPrefix(l.rest(), []byte(s)) {
		return l.fail(what)
	}
	l.pos += len(s)
	return nil
}

// space consumes exactly one space before the field described by next.
func (l *lexer) space(next string) error {
	if l.eol() || l.line[l.pos] != ' ' {
		return l.fail("a space before " + next)
	}
	l.pos++
	return nil
}

// token returns the bytes up to the next space or the end of the line.
func (l *lexer) token() []byte {
	start := l.pos
	for l.pos < len(l.line) && l.line[l.pos] != ' ' {
		l.pos++
	}
	return l.line[start:l.pos]
}

// until returns the bytes before the next c and consumes c; fails when there is none.
func (l *lexer) until(c byte, what string) ([]byte, error) {
	i := bytes.IndexByte(l.rest(), c)
	if i < 0 {
		return nil, l.errAt(len(l.line), what)
	}
	b := l.line[l.pos : l.pos+i]
	l.pos += i + 1
	return b, nil
}

// quoted consumes a double-quoted value and returns it unescaped. The closing quote is
// the first unescaped '"' followed by a space or the end of the line, so a stray quote
// inside a value (from a producer that does not escape) does not end it early.
func (l *lexer) quoted(what string) (string, error) {
	if l.eol() || l.line[l.pos] != '"' {
		return "", l.fail("quoted " + what)
	}
	start := l.pos + 1
	if l.unclosed > 0 && start >= l.unclosed {
		return "", l.errAt(len(l.line), `closing '"' of `+what)
	}
	escaped := false
	for i := start; i < len(l.line); i++ {
		switch l.line[i] {
		case '\\':
			escaped = true
			i++
		case '"':
			if i+1 == len(l.line) || l.line[i+1] == ' ' {
				l.pos = i + 1
				if !escaped {
					return string(l.line[start:i]), nil
				}
				return unescape(l.line[start:i]), nil
			}
		}
	}
	if l.unclosed == 0 {
		l.unclosed = start
	}
	return "", l.errAt(len(l.line), `closing '"' of `+what)
}

// dashed maps gorouter's and Apache's placeholder for "nothing" to "".
func dashed(s string) string {
	if s == "-" {
		return ""
	}
	return s
}

// unescape undoes strconv.Quote (gorouter) and ap_escape_logitem (Apache): \" \\ \n
// \t … \xhh \uhhhh \Uhhhhhhhh. Escapes it does not know are kept as written.
func unescape(b []byte) string {
	var sb strings.Builder
	sb.Grow(len(b))
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c != '\\' || i+1 == len(b) {
			sb.WriteByte(c)
			continue
		}
		i++
		switch b[i] {
		case '"', '\\', '\'':
			sb.WriteByte(b[i])
		case 'a':
			sb.WriteByte('\a')
		case 'b':
			sb.WriteByte('\b')
		case 'f':
			sb.WriteByte('\f')
		case 'n':
			sb.WriteByte('\n')
		case 'r':
			sb.WriteByte('\r')
		case 't':
			sb.WriteByte('\t')
		case 'v':
			sb.WriteByte('\v')
		case 'x', 'u', 'U':
			n := 2
			if b[i] == 'u' {
				n = 4
			} else if b[i] == 'U' {
				n = 8
			}
			v, ok := hexValue(b[i+1:], n)
			switch {
			case !ok:
				sb.WriteByte('\\')
				sb.WriteByte(b[i])
				continue
			case b[i] == 'x':
				sb.WriteByte(byte(v))
			case utf8.ValidRune(rune(v)):
				sb.WriteRune(rune(v))
			default:
				sb.WriteRune(utf8.RuneError)
			}
			i += n
		default:
			sb.WriteByte('\\')
			sb.WriteByte(b[i])
		}
	}
	return sb.String()
}

func hexValue(b []byte, n int) (uint32, bool) {
	if len(b) < n {
		return 0, false
	}
	var v uint32
	for _, c := range b[:n] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		v = v<<4 | uint32(c)
	}
	return v, true
}

// seconds parses gorouter's "0.004512" (digits, an optional fraction) exactly, without
// a detour through float64.
func seconds(b []byte) (time.Duration, bool) {
	intPart, frac, _ := bytes.Cut(b, []byte{'.'})
	if len(intPart) == 0 && len(frac) == 0 {
		return 0, false
	}
	whole := int64(0)
	if len(intPart) > 0 {
		var ok bool
		// 9,223,372,036 s is the largest whole number of seconds a Duration holds.
		if whole, ok = decimal.Parse(intPart); !ok || whole > 9_000_000_000 {
			return 0, false
		}
	}
	var ns int64
	for i, c := range frac {
		if c < '0' || c > '9' {
			return 0, false
		}
		if i < 9 {
			ns = ns*10 + int64(c-'0')
		}
	}
	for i := len(frac); i < 9; i++ {
		ns *= 10
	}
	return time.Duration(whole)*time.Second + time.Duration(ns), true
}

// timeLayouts are the timestamps access logs have carried, tried in order: gorouter
// since 2020 (nanoseconds and a literal Z), cf-deployment 12.x (millis, +0000),
// cf-release (day first), Apache's %t.
var timeLayouts = [...]string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05Z0700",
	"02/01/2006:15:04:05 -0700",
	"02/Jan/2006:15:04:05 -0700",
}

func parseTime(b []byte) (time.Time, bool) {
	s := string(b)
	for _, layout := range timeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// splitRequest splits "METHOD URI PROTO" at its first and last spaces; "GET /" (HTTP/0.9)
// has no proto, and a line without spaces is all URI.
func splitRequest(s string) (method, uri, proto string) {
	first := strings.IndexByte(s, ' ')
	if first < 0 {
		return "", s, ""
	}
	last := strings.LastIndexByte(s, ' ')
	if last == first {
		return s[:first], s[first+1:], ""
	}
	return s[:first], s[first+1 : last], s[last+1:]
}
