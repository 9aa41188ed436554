package procstat

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	t.Parallel()
	line := "4242 (we(ird) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 150 50 7 3 20 0 1 0 12345 1000000 321 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0"
	st, err := Parse([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if st.State != 'S' || st.PPID != 1 || st.PGRP != 4242 || st.Ticks != 210 || st.RSS != 321 || st.StartTime != 12345 {
		t.Errorf("Parse = %+v", st)
	}
	for _, bad := range []string{"", "1 (x) S 1", "1 x S 1 2 3"} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%q) succeeded", bad)
		}
	}
	self, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Skip("no /proc")
	}
	if st, err := Parse(self); err != nil || st.PPID != os.Getppid() || st.PGRP != ownPGRP() || st.RSS == 0 || st.StartTime == 0 {
		t.Errorf("own stat = %+v, %v", st, err)
	}
}

func TestSameTellsAProcessFromAnotherWithItsPID(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	start, err := StartTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	if !Alive(pid) || !Same(pid, start) {
		t.Fatalf("a live sleep: Alive %t, Same %t", Alive(pid), Same(pid, start))
	}
	if Same(pid, start+1) {
		t.Error("Same with another start time = true")
	}
	cmd.Process.Kill()
	// Not reaped yet: a zombie, which signal 0 still finds, is gone for Alive.
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if st, err := Read(pid); err == nil && st.State == 'Z' {
			break
		}
	}
	if Alive(pid) || Same(pid, start) {
		t.Errorf("a killed, unreaped sleep: Alive %t, Same %t", Alive(pid), Same(pid, start))
	}
	cmd.Wait()
	if _, err := Read(pid); !os.IsNotExist(err) {
		t.Errorf("Read of a reaped process = %v, want not exist", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("1 (init) S 0 1 1 0 -1 4194560 100 0 0 0 150 50 7 3 20 0 1 0 12345 1000000 321 0"))
	f.Add([]byte("1 ()) ) S"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = Parse(b) // must not panic
	})
}
