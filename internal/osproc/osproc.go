// Package osproc is the process control whose system calls differ between operating
// systems: signals to a process or its group, the user and group a child runs as, dying
// with the parent, and an exclusive lock on a file. On Unix each function is the
// system call; on Windows, what has no equivalent returns an error wrapping
// errors.ErrUnsupported, so code that needs it (the local foundation, Linux-only by
// nature) still compiles there and says what is missing instead.
package osproc

import "errors"

// ErrLocked is what LockFile returns when another process holds the lock.
var ErrLocked = errors.New("locked by another process")
