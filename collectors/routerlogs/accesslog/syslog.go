package accesslog

import (
	"bytes"
	"strconv"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/rfc5424"
)

// SyslogFrame reads the syslog framing of a line as a drain receives it from CF's
// syslog agent and a file keeps it: an RFC 5424 message ("<14>1 TIMESTAMP org.space.app
// APP_GUID [RTR/3] - [tags@47450 …] LINE"), possibly behind its RFC 6587 octet count
// ("312 <14>1 …", a TCP drain's stream saved as is; its message ends with the newline,
// so one frame is one line). framed is false for a line that is not framed so (it
// starts with neither '<' nor digits and a space and '<'); then m and at mean nothing.
// Otherwise m is the message with its offsets relative to at, where the message
// begins in line, and err a *ParseError for a header that does not fit RFC 5424 or a
// count shorter than the message.
func SyslogFrame(line []byte) (m rfc5424.Message, at int, framed bool, err error) {
	count := -1
	if len(line) > 0 && line[0] != '<' {
		i := 0
		for i < len(line) && i < 8 && '0' <= line[i] && line[i] <= '9' {
			i++
		}
		if i == 0 || i+1 >= len(line) || line[i] != ' ' || line[i+1] != '<' {
			return rfc5424.Message{}, 0, false, nil
		}
		count, _ = strconv.Atoi(string(line[:i]))
		at = i + 1
	}
	if len(line) == 0 {
		return rfc5424.Message{}, 0, false, nil
	}
	m, perr := rfc5424.Parse(line[at:])
	if perr != nil {
		col := at
		if pe, ok := perr.(*rfc5424.ParseError); ok {
			col += pe.Column - 1
			return m, at, true, syslogErr(line, col, "a syslog header (RFC 5424): "+pe.Field)
		}
		return m, at, true, syslogErr(line, col, "a syslog header (RFC 5424)")
	}
	// The line lost its newline, and perhaps a CR before it and blanks after the
	// message, which the count includes; a count below what is left means the line
	// holds more than its frame.
	if count >= 0 && count < len(bytes.TrimRight(line[at:], " \t\r\n")) {
		return m, at, true, syslogErr(line, 0, "an octet count ("+strconv.Itoa(count)+") as long as the message")
	}
	return m, at, true, nil
}

func syslogErr(line []byte, col int, expected string) error {
	l := newLexer(string(Gorouter), line)
	return l.errAt(col, expected)
}

// LineSource returns the source a framed line names: "RTR/0" for a `cf logs` line
// ("… [RTR/0] OUT …") or a syslog message with proc-id [RTR/0]; ok is false for a line
// with neither framing (a router's own access log) and for a syslog frame whose
// header does not parse (ParseGorouter says why).
func LineSource(line []byte) (source string, ok bool) {
	if n, src := cfLogsPrefix(line); n > 0 {
		return string(src[1 : len(src)-1]), true
	}
	m, _, framed, err := SyslogFrame(line)
	if !framed || err != nil {
		return "", false
	}
	typ, inst, ok := m.Source()
	if !ok {
		return m.ProcID, true
	}
	if inst == "" {
		return typ, true
	}
	return typ + "/" + inst, true
}
