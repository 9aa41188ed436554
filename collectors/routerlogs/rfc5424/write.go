package rfc5424

import "strconv"

// Priorities CF's syslog agent gives a log line: user.info for stdout, user.err for
// stderr.
const (
	PriorityOut = 14
	PriorityErr = 11
)

// TimeFormat is the timestamp layout of CF's syslog agent (microseconds, numeric zone;
// it writes UTC as +00:00).
const TimeFormat = "2006-01-02T15:04:05.999999-07:00"

// Append appends m as CF's syslog agent writes a log line: version 1, the timestamp in
// UTC, "-" for empty header fields, the structured data as given (nothing when nil, as
// the agent writes an envelope without tags), and Msg with a newline when it has none.
// Header fields must already be printable US-ASCII within their limits (the agent
// sanitises names into the hostname); Append does not check them.
func Append(dst []byte, m *Message) []byte {
	dst = append(dst, '<')
	dst = strconv.AppendInt(dst, int64(m.Priority), 10)
	dst = append(dst, ">1 "...)
	if m.Timestamp.IsZero() {
		dst = append(dst, '-')
	} else {
		dst = m.Timestamp.UTC().AppendFormat(dst, TimeFormat)
	}
	for _, f := range [...]string{m.Hostname, m.AppName, m.ProcID, m.MsgID} {
		dst = append(dst, ' ')
		dst = appendNil(dst, f)
	}
	dst = append(dst, ' ')
	dst = append(dst, m.StructuredData...)
	dst = append(dst, ' ')
	dst = append(dst, m.Msg...)
	if len(m.Msg) == 0 || m.Msg[len(m.Msg)-1] != '\n' {
		dst = append(dst, '\n')
	}
	return dst
}

func appendNil(dst []byte, s string) []byte {
	if s == "" {
		return append(dst, '-')
	}
	return append(dst, s...)
}

// ProcID is the proc-id CF's agent writes for a source type and instance: "[RTR/3]",
// "[APP/PROC/WEB/0]", "[API]" without an instance.
func ProcID(sourceType, instance string) string {
	if instance == "" {
		return "[" + sourceType + "]"
	}
	return "[" + sourceType + "/" + instance + "]"
}
