package testkit

import "testing"

// ReportCPU adds a cpu-ns/op metric to b from here to the end of its run:
// the test process's user+system CPU time (ProcessCPU) per iteration. On
// a shared, loaded 2-core machine wall-clock ns/op mostly
// measures waiting; CPU per operation is the reading that counts. Where
// ProcessCPU is not available (Windows) it reports nothing.
func ReportCPU(b *testing.B) {
	start := ProcessCPU()
	b.Cleanup(func() {
		if used := ProcessCPU() - start; start > 0 && b.N > 0 {
			b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
		}
	})
}
