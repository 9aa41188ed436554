//go:build !unix

package measure

import "os"

// maxRSS is 0 where the OS reports no rusage for a waited-for process tree.
func maxRSS(*os.ProcessState) int64 { return 0 }
