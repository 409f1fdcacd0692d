package metrics

import (
	"testing"

	"github.com/dual-proxy/dual-proxy/proxy/statusdoc"
)

// BenchmarkDecision is the per-decision cost of the series (one served
// CONNECT, no failure): what every new tunnel pays.
func BenchmarkDecision(b *testing.B) {
	m := New()
	d := statusdoc.Decision{Kind: "connect", Host: "example.com", Candidate: "direct", LatencyMS: 0.4}
	b.ReportAllocs()
	for b.Loop() {
		m.decision(d)
	}
}

// TestDecisionSeries: decisions of interleaved kinds and candidates count
// into their own series (SPEC OPS-5), whichever the last one was (the
// one-entry lastServed in front of servedCache).
func TestDecisionSeries(t *testing.T) {
	t.Run("OPS-5/interleaved-decisions-count-in-their-series", func(t *testing.T) {
		m := New()
		ds := []statusdoc.Decision{
			{Kind: "http", Candidate: "direct"}, {Kind: "http", Candidate: "direct"},
			{Kind: "connect", Candidate: "direct"}, {Kind: "http", Candidate: "http://gw:3128"},
			{Kind: "http", Candidate: "direct"}, {Kind: "http"}, {Kind: "connect", Candidate: "direct"},
		}
		want := map[[2]string]float64{}
		for _, d := range ds {
			m.decision(d)
			c := d.Candidate
			if c == "" {
				c = "none"
			}
			want[[2]string{d.Kind, c}]++
		}
		fams, err := m.registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[[2]string]float64{}
		for _, f := range fams {
			if f.GetName() != "dual_proxy_requests_total" {
				continue
			}
			for _, s := range f.Metric {
				var k [2]string
				for _, l := range s.Label {
					switch l.GetName() {
					case "kind":
						k[0] = l.GetValue()
					case "candidate":
						k[1] = l.GetValue()
					}
				}
				got[k] = s.GetCounter().GetValue()
			}
		}
		if len(got) != len(want) {
			t.Fatalf("series %v, want %v", got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("series %v = %v, want %v (all: %v)", k, got[k], v, got)
			}
		}
	})
}
