package engine

import (
	"testing"

	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/route"
	"github.com/dual-proxy/dual-proxy/proxy/statusdoc"
)

// Helpers of the tests that drive the engine alone (plan_test.go,
// race_single_test.go); the tests through a proxy server have theirs in
// helpers_test.go.

// selCand parses one gateway URL into a candidate.
func selCand(t *testing.T, raw string) candidate.Candidate {
	t.Helper()
	c, err := route.ParseGateway(raw, "gateway")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// selLastDecision returns the engine's latest decision.
func selLastDecision(t *testing.T, e *Engine) statusdoc.Decision {
	t.Helper()
	ds := e.Decisions()
	if len(ds) == 0 {
		t.Fatal("no decision recorded")
	}
	return ds[len(ds)-1]
}
