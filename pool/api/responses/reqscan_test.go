package responses

import (
	"encoding/json"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/api/internal/wiretest"
)

// reqScanCases are the request struct's scanner next to json.Unmarshal.
var reqScanCases = []wiretest.ScanCase{
	{Name: "responses",
		Scan: func(b []byte) (any, bool) { var r responsesRequest; ok := r.Scan(b); return r, ok },
		Std:  func(b []byte) (any, error) { var r responsesRequest; err := json.Unmarshal(b, &r); return r, err }},
}

// FuzzScanRequest: whenever the one-pass scanner decodes a body, the body
// is one json.Unmarshal accepts and the struct is the one it fills (SPEC
// POOL-2, POOL-5: model, stream, session hints and content read as
// before), for any input.
func FuzzScanRequest(f *testing.F) {
	for _, s := range wiretest.RequestSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) { wiretest.CheckScan(t, reqScanCases, in) })
}

// TestScanRequest: the usual request bodies take the one pass (the fallback
// would hide a scanner that never decodes anything; FuzzScanRequest's seeds
// check what it decodes).
func TestScanRequest(t *testing.T) {
	t.Run("POOL-5/usual-bodies-are-scanned", func(t *testing.T) {
		for i, s := range wiretest.RequestSeeds[:6] {
			for _, c := range reqScanCases[:1] {
				if _, ok := c.Scan([]byte(s)); !ok {
					t.Errorf("seed %d: %s scanner gave up", i, c.Name)
				}
			}
		}
	})
}

// TestScanHostileBodies: the one-pass request scanner with hostile but
// valid (or nearly valid) bodies: it decodes what json.Unmarshal decodes,
// and no body costs it much more than json.Unmarshal's two passes.
func TestScanHostileBodies(t *testing.T) {
	for name, b := range wiretest.HostileBodies() {
		t.Run("POOL-5/"+name, func(t *testing.T) { wiretest.CheckScanHostile(t, reqScanCases, b) })
	}
}
