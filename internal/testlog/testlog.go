// Package testlog holds what tests use to capture output that several goroutines
// write: loggers, servers, redirected standard error.
package testlog

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer that is safe for concurrent Write and String.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
