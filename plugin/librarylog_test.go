package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLibraryLogAppendsThenStartsAfresh(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache", "cf-benchmark")
	write := func(s string) {
		f := libraryLog(dir)
		if f == nil {
			t.Fatal("libraryLog = nil")
		}
		f.WriteString(s)
		f.Close()
	}
	write("one\n")
	write("two\n")
	path := filepath.Join(dir, "cf-benchmark.log")
	if b, _ := os.ReadFile(path); string(b) != "one\ntwo\n" {
		t.Fatalf("log = %q, want both lines", b)
	}
	write(strings.Repeat("x", libraryLogMax))
	write("three\n")
	if b, _ := os.ReadFile(path); string(b) != "three\n" {
		t.Fatalf("log after passing %d bytes = %d bytes, want it started afresh", libraryLogMax, len(b))
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want the owner's alone", fi.Mode())
	}
	if libraryLog(filepath.Join(path, "under-a-file")) != nil {
		t.Error("a log that cannot be opened gave a file")
	}
}
