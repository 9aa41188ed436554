package sample

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
)

// ErrClass says why a request got no HTTP response. It is stored as a small integer; the
// numbering is part of the results schema and must not change.
type ErrClass uint8

// Error classes. New classes are appended.
const (
	ErrNone ErrClass = iota
	ErrOther
	ErrTimeout
	ErrRefused
	ErrReset
	ErrTLS
	ErrDNS
	ErrCanceled
)

var errClassNames = [...]string{"", "other", "timeout", "refused", "reset", "tls", "dns", "canceled"}

// String returns the class name used in CSV exports and reports ("" for ErrNone).
func (c ErrClass) String() string {
	if int(c) < len(errClassNames) {
		return errClassNames[c]
	}
	return "unknown"
}

// Classify maps a transport error from an HTTP request to its class. A nil error is ErrNone.
func Classify(err error) ErrClass {
	if err == nil {
		return ErrNone
	}
	var (
		dnsErr  *net.DNSError
		certErr *tls.CertificateVerificationError
		recErr  tls.RecordHeaderError
		unkAuth x509.UnknownAuthorityError
		netErr  net.Error
	)
	switch {
	case errors.Is(err, context.Canceled):
		return ErrCanceled
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return ErrTimeout
	case errors.As(err, &dnsErr):
		return ErrDNS
	case errors.Is(err, syscall.ECONNREFUSED):
		return ErrRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return ErrReset
	case errors.As(err, &certErr), errors.As(err, &recErr), errors.As(err, &unkAuth):
		return ErrTLS
	case errors.As(err, &netErr) && netErr.Timeout():
		return ErrTimeout
	}
	return ErrOther
}
