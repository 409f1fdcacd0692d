//go:build unix

package proxy

import (
	"syscall"
	"testing"
	"time"
)

// reportCPU adds a cpu-ns/op metric (user+system CPU of the test process
// per iteration, getrusage) to b from here to its end: on the shared,
// loaded machine of issue 20 wall-clock ns/op mostly measures waiting.
func reportCPU(b *testing.B) {
	start := processCPU()
	b.Cleanup(func() {
		if used := processCPU() - start; start > 0 && b.N > 0 {
			b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
		}
	})
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
