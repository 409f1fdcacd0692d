package api

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/api/internal/wiretest"
)

// FuzzDecodeValid: DecodeValidRequest answers as DecodeRequest for every
// API and any valid JSON body (SPEC POOL-21: the translated request is the
// client's; it is decoded once), and invalid bodies must not make it
// panic. Each API's package checks its one-scan decoders against
// json.Unmarshal over the same seeds.
func FuzzDecodeValid(f *testing.F) {
	for _, s := range wiretest.DecodeValidSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if !json.Valid(in) {
			for _, api := range apis {
				_, _ = DecodeValidRequest(api, in, "m", true)
			}
			return
		}
		checkDecodeValid(t, in)
	})
}

func checkDecodeValid(t *testing.T, in []byte) {
	t.Helper()
	for _, api := range apis {
		r1, e1 := DecodeRequest(api, in, "m", true)
		r2, e2 := DecodeValidRequest(api, in, "m", true)
		if fmt.Sprint(e1) != fmt.Sprint(e2) || !reflect.DeepEqual(r1, r2) {
			t.Fatalf("%s %s:\nDecodeRequest      %+v %v\nDecodeValidRequest %+v %v", api, in, r1, e1, r2, e2)
		}
	}
}

// TestDecodeValid runs the seeds through every API's DecodeValidRequest
// (SPEC POOL-21).
func TestDecodeValid(t *testing.T) {
	for _, s := range wiretest.DecodeValidSeeds() {
		t.Run("POOL-21/same-as-unmarshal", func(t *testing.T) { checkDecodeValid(t, s) })
	}
}
