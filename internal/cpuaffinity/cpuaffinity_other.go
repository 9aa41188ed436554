//go:build !linux

package cpuaffinity

import (
	"errors"
	"fmt"
)

// errNotLinux is what every function returns off Linux: CPU pinning is
// sched_setaffinity(2), which only the local foundation and the benchmarks use.
var errNotLinux = fmt.Errorf("pinning to CPUs works on Linux only: %w", errors.ErrUnsupported)

// Of returns the CPUs that thread (or process) id may run on; off Linux, an error.
func Of(id int) ([]int, error) { return nil, errNotLinux }

// Pin puts every thread of process pid on cpus; off Linux, an error.
func Pin(pid int, cpus []int) error { return errNotLinux }

// PinWithChildren pins process pid and its children to cpus; off Linux, an error.
func PinWithChildren(pid int, cpus []int) error { return errNotLinux }
