package payload

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/fstest"
)

func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestExtractWritesTheProgramOnceWhole: the carried program comes out byte for byte,
// executable, in a folder named after its content; callers at once all get it whole,
// and another program gets another folder.
func TestExtractWritesTheProgramOnceWhole(t *testing.T) {
	dir := t.TempDir()
	program := bytes.Repeat([]byte("\x7fELF pushed program "), 50000)
	fsys := fstest.MapFS{carried: {Data: gzipped(t, program)}}
	var wg sync.WaitGroup
	paths := make([]string, 8)
	errs := make([]error, 8)
	for i := range paths {
		wg.Go(func() { paths[i], errs[i] = extract(fsys, dir) })
	}
	wg.Wait()
	for i := range paths {
		if errs[i] != nil || paths[i] != paths[0] {
			t.Fatalf("caller %d: %q, %v; caller 0: %q", i, paths[i], errs[i], paths[0])
		}
	}
	got, err := os.ReadFile(paths[0])
	if err != nil || !bytes.Equal(got, program) {
		t.Fatalf("extracted %d bytes (%v), want the %d carried", len(got), err, len(program))
	}
	if st, _ := os.Stat(paths[0]); st.Mode().Perm()&0o100 == 0 || filepath.Base(paths[0]) != Name {
		t.Errorf("extracted %s with mode %v: want an executable named %s", paths[0], st.Mode(), Name)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(paths[0]), Name+".*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	other, err := extract(fstest.MapFS{carried: {Data: gzipped(t, []byte("another build"))}}, dir)
	if err != nil || filepath.Dir(other) == filepath.Dir(paths[0]) {
		t.Errorf("another program went to %q (%v), beside the first %q", other, err, paths[0])
	}
}

func TestExtractSaysWhatIsMissingOrDamaged(t *testing.T) {
	if _, err := extract(fstest.MapFS{"data/README.md": {Data: []byte("x")}}, t.TempDir()); !errors.Is(err, ErrNotCarried) {
		t.Errorf("nothing carried: %v, want ErrNotCarried", err)
	}
	gz := gzipped(t, bytes.Repeat([]byte("x"), 4096))
	_, err := extract(fstest.MapFS{carried: {Data: gz[:len(gz)/2]}}, t.TempDir())
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("damaged")) {
		t.Errorf("a truncated program: %v, want it called damaged", err)
	}
}
