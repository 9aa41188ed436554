// Package rfc5424 reads and writes syslog messages (RFC 5424) as Cloud Foundry's syslog
// agent sends an app's log lines to its drains, and their framing: one message per
// HTTPS request body, or several newline-terminated ones (the agent's batching HTTPS
// writer), and octet counting over TCP or TLS (RFC 6587, "LEN SP MSG").
//
// The agent writes a log line as
//
//	<14>1 2026-11-24T18:57:01.123456+00:00 org.space.app APP_GUID [RTR/3] - [tags@47450 …] LINE\n
//
// priority 14 (user.info) for stdout and 11 (user.err) for stderr, the hostname
// org.space.app (names sanitised), the app's GUID as app-name, the source type and
// instance as proc-id ([RTR/3], [APP/PROC/WEB/0], [CELL/0], [STG/0], …), no msgid, the
// envelope's tags as structured data, and the line with a newline appended.
//
// Parse is strict about the header's structure (every failure is a *ParseError naming
// the field, so that bad frames can be counted by reason) and tolerant where the agent
// departs from the RFC: tag values it does not escape, and no structured data at all.
// Parsers never panic and never keep their input beyond the returned Message, whose
// byte fields alias it.
package rfc5424

import (
	"bytes"
	"fmt"
	"strconv"
	"time"
)

// Message is one syslog message. Its byte slices alias the parsed input.
type Message struct {
	// Priority is facility*8 + severity (0..191).
	Priority int
	// Version is the protocol version, 1 for RFC 5424.
	Version int
	// Timestamp is zero when the message carried none ("-").
	Timestamp time.Time
	// Hostname, AppName, ProcID and MsgID are "" for the nil value "-".
	Hostname, AppName, ProcID, MsgID string
	// StructuredData is the SD elements as written ("[tags@47450 …]"), nil for none.
	StructuredData []byte
	// Msg is the message without the newline that ends it.
	Msg []byte
	// MsgOffset is where Msg begins in the input.
	MsgOffset int
}

// Source splits a Cloud Foundry proc-id into its source type and instance:
// "[RTR/3]" is ("RTR", "3"), "[APP/PROC/WEB/0]" ("APP/PROC/WEB", "0"), "[API]" ("API",
// ""). ok is false when the proc-id is not bracketed.
func (m *Message) Source() (typ, instance string, ok bool) {
	p := m.ProcID
	if len(p) < 3 || p[0] != '[' || p[len(p)-1] != ']' {
		return "", "", false
	}
	p = p[1 : len(p)-1]
	if i := lastSlash(p); i >= 0 {
		return p[:i], p[i+1:], true
	}
	return p, "", true
}

// IsRouter reports whether the message is a router access-log line: proc-id [RTR/N].
func (m *Message) IsRouter() bool {
	typ, _, ok := m.Source()
	return ok && typ == "RTR"
}

func lastSlash(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '/' {
			return i
		}
	}
	return -1
}

// Reasons a message or frame is refused (ParseError.Field, FrameError.Reason), for
// counters.
const (
	FieldPriority       = "priority"
	FieldVersion        = "version"
	FieldTimestamp      = "timestamp"
	FieldHostname       = "hostname"
	FieldAppName        = "app-name"
	FieldProcID         = "proc-id"
	FieldMsgID          = "msgid"
	FieldStructuredData = "structured-data"
)

// ParseError says which header field of a message did not fit and where.
type ParseError struct {
	// Field is one of the Field* constants.
	Field string
	// Column is the 1-based byte offset in the input.
	Column int
	// Found quotes what is there.
	Found string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("syslog: column %d: bad %s, found %s", e.Column, e.Field, e.Found)
}

// Header field limits (RFC 5424 section 6).
const (
	maxHostname = 255
	maxAppName  = 48
	maxProcID   = 128
	maxMsgID    = 32
)

// Parse parses one RFC 5424 message (a newline, or CR LF, after it is allowed and not
// part of Msg).
func Parse(b []byte) (Message, error) {
	p := parser{b: b}
	var m Message
	var err error
	if m.Priority, err = p.priority(); err != nil {
		return Message{}, err
	}
	if m.Version, err = p.version(); err != nil {
		return Message{}, err
	}
	if m.Timestamp, err = p.timestamp(); err != nil {
		return Message{}, err
	}
	for _, f := range [...]struct {
		dst  *string
		name string
		max  int
	}{
		{&m.Hostname, FieldHostname, maxHostname},
		{&m.AppName, FieldAppName, maxAppName},
		{&m.ProcID, FieldProcID, maxProcID},
		{&m.MsgID, FieldMsgID, maxMsgID},
	} {
		if *f.dst, err = p.field(f.name, f.max); err != nil {
			return Message{}, err
		}
	}
	if m.StructuredData, err = p.structuredData(); err != nil {
		return Message{}, err
	}
	// What follows the structured data is " MSG" or nothing.
	if p.pos < len(p.b) && p.b[p.pos] == ' ' {
		p.pos++
	}
	m.MsgOffset = p.pos
	m.Msg = trimEOL(p.b[p.pos:])
	return m, nil
}

// trimEOL drops one newline (and a CR before it) that ends a message.
func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}

type parser struct {
	b   []byte
	pos int
}

func (p *parser) fail(field string, at int) error {
	if at > len(p.b) {
		at = len(p.b)
	}
	found := "end of message"
	if rest := p.b[at:]; len(rest) > 24 {
		found = strconv.Quote(string(rest[:24])) + "…"
	} else if len(rest) > 0 {
		found = strconv.Quote(string(rest))
	}
	return &ParseError{Field: field, Column: at + 1, Found: found}
}

// priority reads "<PRIVAL>", PRIVAL 0..191 in 1 to 3 digits without a leading zero
// (but "0" itself).
func (p *parser) priority() (int, error) {
	b := p.b
	if len(b) < 3 || b[0] != '<' {
		return 0, p.fail(FieldPriority, 0)
	}
	n, i := 0, 1
	for ; i < len(b) && i <= 4 && isDigit(b[i]); i++ {
		n = n*10 + int(b[i]-'0')
	}
	digits := i - 1
	if digits == 0 || digits > 3 || i == len(b) || b[i] != '>' || n > 191 || digits > 1 && b[1] == '0' {
		return 0, p.fail(FieldPriority, 0)
	}
	p.pos = i + 1
	return n, nil
}

// version reads a non-zero version of up to 3 digits and the space after it.
func (p *parser) version() (int, error) {
	start := p.pos
	n := 0
	for p.pos < len(p.b) && isDigit(p.b[p.pos]) && p.pos-start < 3 {
		n = n*10 + int(p.b[p.pos]-'0')
		p.pos++
	}
	if p.pos == start || p.b[start] == '0' || p.pos == len(p.b) || p.b[p.pos] != ' ' {
		return 0, p.fail(FieldVersion, start)
	}
	p.pos++
	return n, nil
}

// token returns the bytes up to the next space and consumes that space; it fails
// without one.
func (p *parser) token(field string) ([]byte, error) {
	start := p.pos
	i := bytes.IndexByte(p.b[start:], ' ')
	if i <= 0 {
		return nil, p.fail(field, start)
	}
	p.pos = start + i + 1
	return p.b[start : start+i], nil
}

// timestamp reads "-" or an RFC 3339 time with at most 6 fractional digits and a zone
// (Z or ±hh:mm), as RFC 5424 restricts it.
func (p *parser) timestamp() (time.Time, error) {
	start := p.pos
	tok, err := p.token(FieldTimestamp)
	if err != nil {
		return time.Time{}, err
	}
	if len(tok) == 1 && tok[0] == '-' {
		return time.Time{}, nil
	}
	if len(tok) < len("2006-01-02T15:04:05Z") || tok[10] != 'T' && tok[10] != 't' {
		return time.Time{}, p.fail(FieldTimestamp, start)
	}
	if i := bytes.IndexByte(tok, '.'); i >= 0 {
		frac := 0
		for j := i + 1; j < len(tok) && isDigit(tok[j]); j++ {
			frac++
		}
		if frac == 0 || frac > 6 {
			return time.Time{}, p.fail(FieldTimestamp, start)
		}
	}
	t, perr := time.Parse(time.RFC3339Nano, string(tok))
	if y := t.UTC().Year(); perr != nil || y < 1 || y > 9999 { // UTC must be writable again
		return time.Time{}, p.fail(FieldTimestamp, start)
	}
	return t, nil
}

// field reads "-" or 1..max printable US-ASCII characters and the space after them.
func (p *parser) field(name string, max int) (string, error) {
	start := p.pos
	tok, err := p.token(name)
	if err != nil {
		return "", err
	}
	if len(tok) > max {
		return "", p.fail(name, start)
	}
	for _, c := range tok {
		if c < 33 || c > 126 {
			return "", p.fail(name, start)
		}
	}
	if len(tok) == 1 && tok[0] == '-' {
		return "", nil
	}
	return string(tok), nil
}

// structuredData reads "-", one or more SD elements, or, as CF's agent writes when an
// envelope has no tags, nothing (the space before the message follows at once).
func (p *parser) structuredData() ([]byte, error) {
	start := p.pos
	if p.pos >= len(p.b) || p.b[p.pos] == ' ' || p.b[p.pos] == '\n' || p.b[p.pos] == '\r' {
		return nil, nil
	}
	if p.b[p.pos] == '-' {
		p.pos++
		if p.pos < len(p.b) && !isEOLOrSpace(p.b[p.pos]) {
			return nil, p.fail(FieldStructuredData, start)
		}
		return nil, nil
	}
	for p.pos < len(p.b) && p.b[p.pos] == '[' {
		if err := p.element(); err != nil {
			return nil, err
		}
	}
	if p.pos == start || p.pos < len(p.b) && !isEOLOrSpace(p.b[p.pos]) {
		return nil, p.fail(FieldStructuredData, p.pos)
	}
	return p.b[start:p.pos], nil
}

// element reads `[SD-ID *(SP NAME="VALUE")]`. A value ends at the first '"' not
// escaped by a backslash that is followed by a space or ']': CF's agent does not
// escape tag values, so a '"' inside one is taken as part of it.
func (p *parser) element() error {
	p.pos++ // '['
	if n := p.sdName(); n == 0 || n > 32 {
		return p.fail(FieldStructuredData, p.pos)
	}
	for {
		if p.pos >= len(p.b) {
			return p.fail(FieldStructuredData, p.pos)
		}
		switch p.b[p.pos] {
		case ']':
			p.pos++
			return nil
		case ' ':
			p.pos++
		default:
			return p.fail(FieldStructuredData, p.pos)
		}
		if n := p.sdName(); n == 0 || n > 32 {
			return p.fail(FieldStructuredData, p.pos)
		}
		if p.pos+1 >= len(p.b) || p.b[p.pos] != '=' || p.b[p.pos+1] != '"' {
			return p.fail(FieldStructuredData, p.pos)
		}
		p.pos += 2
		closed := false
		for p.pos < len(p.b) {
			c := p.b[p.pos]
			if c == '\\' && p.pos+1 < len(p.b) {
				p.pos += 2
				continue
			}
			p.pos++
			if c == '"' && p.pos < len(p.b) && (p.b[p.pos] == ' ' || p.b[p.pos] == ']') {
				closed = true
				break
			}
		}
		if !closed {
			return p.fail(FieldStructuredData, p.pos)
		}
	}
}

// sdName consumes an SD-NAME (printable US-ASCII but '=', ' ', ']', '"') and returns
// its length.
func (p *parser) sdName() int {
	start := p.pos
	for p.pos < len(p.b) {
		c := p.b[p.pos]
		if c < 33 || c > 126 || c == '=' || c == ']' || c == '"' {
			break
		}
		p.pos++
	}
	return p.pos - start
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isEOLOrSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' }
