package harness

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
)

// machine describes this machine for the report: cores, CPU model, memory, kernel, OS.
func machine() string {
	model := firstValue("/proc/cpuinfo", "model name")
	mem, kernel := memoryAndKernel()
	osName := strings.Trim(firstValue("/etc/os-release", "PRETTY_NAME"), `"`)
	return fmt.Sprintf("%d cores (%s)%s%s, %s", runtime.NumCPU(), model, mem, kernel, osName)
}

// firstValue is the value of the first "key: value" or "key=value" line of file.
func firstValue(file, key string) string {
	f, err := os.Open(file)
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			k, v, ok = strings.Cut(sc.Text(), "=")
		}
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
