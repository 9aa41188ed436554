//go:build !unix

package h1

import "errors"

// Elsewhere a request is written and its response read through net.Conn.
const rawSupported = false

func (s *sock) writeRead([]byte) (int, error) { return 0, errors.ErrUnsupported }
