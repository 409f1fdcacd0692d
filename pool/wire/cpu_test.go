package wire

import "testing"

// reportCPU starts measuring the process's CPU for b; the returned func,
// called after the loop, reports it as cpu-ns/op (issue 20: on the shared
// 2-core machine CPU per operation is the reading that counts).
func reportCPU(b *testing.B) func() {
	cpu0 := processCPU()
	return func() {
		if cpu := processCPU() - cpu0; cpu0 > 0 {
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
		}
	}
}
