//go:build unix

package testworld

import (
	"syscall"
	"testing"
	"time"
)

// CPUTime is this process's user plus system CPU time so far
// (getrusage(2) RUSAGE_SELF); it fails tb when the call fails.
func CPUTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
