package responses

import (
	"encoding/json"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/pool/api/internal/wiretest"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

// structScans are the one-scan decoders of the Responses request and its
// parts.
func structScans() []wiretest.StructScan {
	return []wiretest.StructScan{
		wiretest.NewStructScan(rsRequestFields, func(b []byte, w *rsRequest) bool { return scanRsRequest(b, w, nil) }),
		wiretest.NewStructScan(rsItemFields, scanRsItem),
		wiretest.NewStructScan(rsContentFields, scanRsContent),
		wiretest.NewStructScan(rsToolFields, scanRsTool),
	}
}

// FuzzDecodeValid: a valid JSON body decoded by decodeValid fills the
// request struct exactly as json.Unmarshal does and finds topKeys' keys, or
// gives way to json.Unmarshal, and each part's decoder does the same for
// every object and array inside the body (SPEC POOL-21: the translated
// request is the client's; it is decoded once).
func FuzzDecodeValid(f *testing.F) {
	for _, s := range wiretest.DecodeValidSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if !json.Valid(in) {
			return
		}
		wiretest.CheckDecodeValid(t, in, scanRsRequest)
		for _, v := range wiretest.Containers(in) {
			for _, c := range structScans() {
				c.Check(t, v)
			}
		}
	})
}

// TestScanFieldsAreTheJSONNames: each decoder's list of JSON names is its
// struct's (json tags), none two equal ignoring case, so that a key
// naming a field only ignoring case is seen and left to json.Unmarshal
// (SPEC POOL-21).
func TestScanFieldsAreTheJSONNames(t *testing.T) {
	t.Run("POOL-21/scan-fields-are-the-json-names", func(t *testing.T) { wiretest.CheckFieldNames(t, structScans()) })
}

// TestDecodeValid runs the seeds and checks that the usual bodies take the
// one scan (SPEC POOL-21).
func TestDecodeValid(t *testing.T) {
	for _, s := range wiretest.DecodeValidSeeds() {
		t.Run("POOL-21/same-as-unmarshal", func(t *testing.T) { wiretest.CheckDecodeValid(t, s, scanRsRequest) })
	}
	for _, body := range []string{wiretest.ResponsesConversation(3)} {
		t.Run("POOL-21/one-scan", func(t *testing.T) {
			if _, ok := wirefmt.DecodeValid([]byte(body), &rsRequest{}, scanRsRequest); !ok {
				t.Fatal("the usual body takes json.Unmarshal")
			}
		})
	}
}

// BenchmarkDecodeRequest is a client's body of about 100 KiB (a coding
// agent's conversation) decoded into the request struct: "one-scan" by
// decodeValid (the pool's call for a body ParseRequest validated),
// "unmarshal" by json.Unmarshal of the same body (pool/api's
// BenchmarkDecodeRequest has the whole of DecodeValidRequest).
func BenchmarkDecodeRequest(b *testing.B) {
	body := []byte(wiretest.ResponsesConversation(44))
	run := func(name string, fn func() bool) {
		b.Run("responses/"+name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			testkit.ReportCPU(b)
			for b.Loop() {
				if !fn() {
					b.Fatal("not decoded")
				}
			}
		})
	}
	run("one-scan", func() bool { _, ok := wirefmt.DecodeValid(body, &rsRequest{}, scanRsRequest); return ok })
	run("unmarshal", func() bool { return json.Unmarshal(body, &rsRequest{}) == nil })
}
