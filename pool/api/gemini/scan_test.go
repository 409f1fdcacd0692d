package gemini

import (
	"encoding/json"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/api/internal/wiretest"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

// structScans are the one-scan decoders of the generateContent request and its
// parts.
func structScans() []wiretest.StructScan {
	return []wiretest.StructScan{
		wiretest.NewStructScan(gmRequestFields, func(b []byte, w *gmRequest) bool { return scanGmRequest(b, w, nil) }),
		wiretest.NewStructScan(gmContentFields, scanGmContent),
		wiretest.NewStructScan(gmPartFields, scanGmPart),
		wiretest.NewStructScan(gmToolFields, scanGmTool),
		wiretest.NewStructScan(gmFuncFields, scanGmFunc),
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
		wiretest.CheckDecodeValid(t, in, scanGmRequest)
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
		t.Run("POOL-21/same-as-unmarshal", func(t *testing.T) { wiretest.CheckDecodeValid(t, s, scanGmRequest) })
	}
	for _, body := range []string{wiretest.GeminiRequest} {
		t.Run("POOL-21/one-scan", func(t *testing.T) {
			if _, ok := wirefmt.DecodeValid([]byte(body), &gmRequest{}, scanGmRequest); !ok {
				t.Fatal("the usual body takes json.Unmarshal")
			}
		})
	}
}
