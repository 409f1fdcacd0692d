//go:build unix

package testkit

import (
	"syscall"
	"time"
)

// ProcessCPU is this process's user+system CPU time so far (getrusage(2)
// RUSAGE_SELF), or 0 when it cannot be read.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
