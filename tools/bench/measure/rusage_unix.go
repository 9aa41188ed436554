//go:build unix

package measure

import (
	"os"
	"runtime"
	"syscall"
)

// maxRSS is the peak resident set in bytes of ps's process tree, from its rusage:
// kilobytes on Linux and the BSDs, bytes on macOS.
func maxRSS(ps *os.ProcessState) int64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		return int64(ru.Maxrss)
	}
	return int64(ru.Maxrss) * 1024
}
