package sample

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"unsafe"
)

func TestSampleIs32Bytes(t *testing.T) {
	// The worker's memory budget (≤ 32 bytes per buffered sample) depends on this.
	if got := unsafe.Sizeof(Sample{}); got != 32 {
		t.Fatalf("sizeof(Sample) = %d, want 32", got)
	}
}

func TestTraceIDRoundTrip(t *testing.T) {
	cases := []struct {
		tag, worker uint32
		seq         uint64
		hex, uuid   string
	}{
		{1, 2, 3, "00000001000040020000000000000003", "00000001-0000-4002-0000-000000000003"},
		{0xdeadbeef, MaxWorkerID, 1<<64 - 1, "deadbeefffff4fffffffffffffffffff", "deadbeef-ffff-4fff-ffff-ffffffffffff"},
		{7, 0x1234567, 1 << 40, "0000000712344567" + "0000010000000000", "00000007-1234-4567-0000-010000000000"},
	}
	for _, c := range cases {
		id := NewTraceID(c.tag, c.worker, c.seq)
		if id.String() != c.hex || id.UUID() != c.uuid {
			t.Errorf("NewTraceID(%d,%d,%d) = %s / %s, want %s / %s", c.tag, c.worker, c.seq, id, id.UUID(), c.hex, c.uuid)
		}
		for _, form := range []string{c.hex, c.uuid} {
			back, err := ParseTraceID(form)
			if err != nil {
				t.Fatalf("ParseTraceID(%q): %v", form, err)
			}
			tag, worker, seq := back.Parts()
			if tag != c.tag || worker != c.worker || seq != c.seq {
				t.Errorf("ParseTraceID(%q).Parts() = %d,%d,%d", form, tag, worker, seq)
			}
		}
	}
	for _, bad := range []string{"", "abc", "zz000001000000020000000000000003", "00000001000000020000000000000003ff"} {
		if _, err := ParseTraceID(bad); err == nil {
			t.Errorf("ParseTraceID(%q) succeeded", bad)
		}
	}
}

func TestClassify(t *testing.T) {
	cases := []struct {
		err  error
		want ErrClass
	}{
		{nil, ErrNone},
		{fmt.Errorf("get: %w", context.DeadlineExceeded), ErrTimeout},
		{os.ErrDeadlineExceeded, ErrTimeout},
		{context.Canceled, ErrCanceled},
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, ErrRefused},
		{&net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, ErrReset},
		{io.ErrUnexpectedEOF, ErrReset},
		{&net.DNSError{Err: "no such host", Name: "x"}, ErrDNS},
		{errors.New("something else"), ErrOther},
	}
	for _, c := range cases {
		if got := Classify(c.err); got != c.want {
			t.Errorf("Classify(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
