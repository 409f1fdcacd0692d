package anthropic

import (
	"encoding/json"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/api/internal/wiretest"
)

// reqScanCases are the request struct's scanner and those of the usage of
// message_start and message_delta (POOL-13b cache accounting), each next to
// json.Unmarshal.
var reqScanCases = []wiretest.ScanCase{
	{Name: "anthropic",
		Scan: func(b []byte) (any, bool) { var r anthropicRequest; ok := r.Scan(b); return r, ok },
		Std:  func(b []byte) (any, error) { var r anthropicRequest; err := json.Unmarshal(b, &r); return r, err }},
	{Name: "message_start usage",
		Scan: func(b []byte) (any, bool) { var r startUsage; ok := r.Scan(b); return r, ok },
		Std:  func(b []byte) (any, error) { var r startUsage; err := json.Unmarshal(b, &r); return r, err }},
	{Name: "message_delta usage",
		Scan: func(b []byte) (any, bool) { var r deltaUsage; ok := r.Scan(b); return r, ok },
		Std:  func(b []byte) (any, error) { var r deltaUsage; err := json.Unmarshal(b, &r); return r, err }},
}

// FuzzScanRequest: whenever the one-pass scanner decodes a body, the body
// is one json.Unmarshal accepts and the struct is the one it fills (SPEC
// POOL-2, POOL-5: model, stream, session hints and content read as
// before), for any input; the same for the usage of Anthropic's message_start and
// message_delta (POOL-13b cache accounting).
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
	t.Run("POOL-13b/usual-usage-events-are-scanned", func(t *testing.T) {
		for i, s := range wiretest.UsageSeeds {
			for _, c := range reqScanCases[1:] {
				if _, ok := c.Scan([]byte(s)); !ok {
					t.Errorf("usage seed %d: %s scanner gave up", i, c.Name)
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
