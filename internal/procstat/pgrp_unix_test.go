//go:build unix

package procstat

import "syscall"

func ownPGRP() int { return syscall.Getpgrp() }
