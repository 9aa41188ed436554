package resultsdb

import "testing"

// TestSpillNames: a spill file's name gives back its run and worker; other names none.
func TestSpillNames(t *testing.T) {
	if run, w, ok := ParseSpillName(SpillName("20261127-162609-9546", 17)); !ok || run != "20261127-162609-9546" || w != 17 {
		t.Errorf("round trip: %q %d %v", run, w, ok)
	}
	for _, name := range []string{"cfbench-spill-", "cfbench-spill-run", "cfbench-spill--3", "cfbench-spill-run-0", "cfbench-spill-run-x", "other-run-3", "cfbench-spill-run-99999999999"} {
		if run, w, ok := ParseSpillName(name); ok {
			t.Errorf("%q parsed as run %q worker %d", name, run, w)
		}
	}
}
