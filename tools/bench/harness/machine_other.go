//go:build !linux

package harness

// memoryAndKernel are unknown off Linux, where the harness does not run (it pins with
// taskset and reads /proc).
func memoryAndKernel() (mem, kernel string) { return "", "" }
