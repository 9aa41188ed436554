package harness

import (
	"fmt"
	"strings"
	"syscall"
)

// memoryAndKernel are ", N GiB" and ", kernel RELEASE" for machine, each "" when unknown.
func memoryAndKernel() (mem, kernel string) {
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) == nil {
		mem = fmt.Sprintf(", %.0f GiB", float64(si.Totalram)*float64(si.Unit)/(1<<30))
	}
	var u syscall.Utsname
	if syscall.Uname(&u) == nil {
		var b strings.Builder
		for _, c := range u.Release {
			if c == 0 {
				break
			}
			b.WriteByte(byte(c))
		}
		kernel = ", kernel " + b.String()
	}
	return mem, kernel
}
