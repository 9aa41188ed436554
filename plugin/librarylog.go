package main

import (
	"os"
	"path/filepath"
)

// libraryLogMax is the size over which the library log starts afresh.
const libraryLogMax = 1 << 20

// libraryLog opens the file that this process's os.Stderr becomes: what libraries print
// there on their own (chisel's tunnel client announces each local listener it opens)
// belongs in a log, not among a run's own lines, which go to the stderr that main keeps.
// It is cf-benchmark.log in dir, started afresh when over libraryLogMax; nil when it
// cannot be opened, and then those lines stay on the terminal.
func libraryLog(dir string) *os.File {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil
	}
	path := filepath.Join(dir, "cf-benchmark.log")
	flags := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if fi, err := os.Stat(path); err == nil && fi.Size() > libraryLogMax {
		flags |= os.O_TRUNC
	}
	f, err := os.OpenFile(path, flags, 0o600)
	if err != nil {
		return nil
	}
	return f
}
