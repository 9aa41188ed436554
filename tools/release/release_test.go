package main

import (
	"bytes"
	"debug/macho"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestUniversalBinaryHoldsEachMacBuildWhole: the universal binary reads back as a fat
// Mach-O with an x86-64 and an arm64 slice, each byte for byte the thin build, aligned
// as macOS loads them.
func TestUniversalBinaryHoldsEachMacBuildWhole(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() { println(\"hello\") }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	thin := map[macho.Cpu]string{}
	for arch, cpu := range map[string]macho.Cpu{"amd64": macho.CpuAmd64, "arm64": macho.CpuArm64} {
		out := filepath.Join(dir, "hello-"+arch)
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", out, src)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=darwin", "GOARCH="+arch)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build for darwin/%s: %v\n%s", arch, err, b)
		}
		thin[cpu] = out
	}
	fat := filepath.Join(dir, "hello-universal")
	if err := writeFat(fat, []string{thin[macho.CpuAmd64], thin[macho.CpuArm64]}); err != nil {
		t.Fatal(err)
	}
	ff, err := macho.OpenFat(fat)
	if err != nil {
		t.Fatalf("read the universal binary: %v", err)
	}
	defer ff.Close()
	raw, _ := os.ReadFile(fat)
	if len(ff.Arches) != 2 {
		t.Fatalf("%d slices, want 2", len(ff.Arches))
	}
	for _, a := range ff.Arches {
		want, err := os.ReadFile(thin[a.Cpu])
		if err != nil {
			t.Fatalf("slice of CPU %v: no such thin build", a.Cpu)
		}
		if a.Align != fatAlign || a.Offset%(1<<fatAlign) != 0 || !bytes.Equal(raw[a.Offset:a.Offset+a.Size], want) {
			t.Errorf("slice %v: offset %d, size %d, align %d; want the thin build's %d bytes at a 2^%d boundary", a.Cpu, a.Offset, a.Size, a.Align, len(want), fatAlign)
		}
	}
}

func TestIndexNamesWhatTheCFCLIMatches(t *testing.T) {
	r := Release{Version: "1.2.0", URL: "http://127.0.0.1:1/r"}
	p := r.plugin(map[string]string{"linux64": "cf-benchmark-linux-amd64", "osx": "cf-benchmark-darwin-universal", "win64": "cf-benchmark-windows-amd64.exe"},
		map[string]sums{"cf-benchmark-linux-amd64": {sha1: "aa"}, "cf-benchmark-darwin-universal": {sha1: "bb"}, "cf-benchmark-windows-amd64.exe": {sha1: "cc"}})
	want := []Binary{{"linux64", "http://127.0.0.1:1/r/cf-benchmark-linux-amd64", "aa"}, {"osx", "http://127.0.0.1:1/r/cf-benchmark-darwin-universal", "bb"},
		{"win64", "http://127.0.0.1:1/r/cf-benchmark-windows-amd64.exe", "cc"}}
	if p.Name != "cf-benchmark" || p.Version != "1.2.0" || len(p.Binaries) != 3 {
		t.Fatalf("plugin entry %+v", p)
	}
	for i := range want {
		if p.Binaries[i] != want[i] {
			t.Errorf("binary %d: %+v, want %+v", i, p.Binaries[i], want[i])
		}
	}
	for plat, name := range map[Platform]string{{"linux", "amd64"}: "linux64", {"linux", "arm64"}: "", {"darwin", "arm64"}: "osx", {"darwin", "amd64"}: "osx", {"windows", "amd64"}: "win64"} {
		if got := cliPlatform(plat); got != name {
			t.Errorf("cliPlatform(%s) = %q, want %q", plat, got, name)
		}
	}
}
