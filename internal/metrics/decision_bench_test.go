package metrics

import (
	"testing"

	"github.com/dual-proxy/dual-proxy/proxy/status"
)

// BenchmarkDecision is the per-decision cost of the series (one served
// CONNECT, no failure): what every new tunnel pays (issue 20).
func BenchmarkDecision(b *testing.B) {
	m := New()
	d := status.Decision{Kind: "connect", Host: "example.com", Candidate: "direct", LatencyMS: 0.4}
	b.ReportAllocs()
	for b.Loop() {
		m.decision(d)
	}
}
