package api

import (
	"fmt"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/api/internal/wiretest"
)

// reqFeature is one request feature written in each API's own form
// (wiretest.Feature).
type reqFeature = wiretest.Feature

// reqFeatures are the request features of the translation matrix.
var reqFeatures = wiretest.RequestFeatures

func TestRequestMatrix(t *testing.T) {
	for _, f := range reqFeatures {
		for _, from := range apis {
			src, ok := f.Forms[from]
			if !ok {
				continue
			}
			for _, to := range apis {
				t.Run(fmt.Sprintf("%s/%s-to-%s", f.Name, from, to), func(t *testing.T) {
					r, err := decodeReq(t, from, src)
					if err != nil {
						t.Fatalf("decode %s: %v", from, err)
					}
					got, err := EncodeRequest(to, r)
					if field, want := f.Errs[to]; want {
						if fieldOf(err) != field {
							t.Fatalf("encode %s: error %v, want a FieldError naming %q", to, err, field)
						}
						return
					}
					if err != nil {
						t.Fatalf("encode %s: %v", to, err)
					}
					if g, w := normalize(t, got), normalize(t, []byte(f.Forms[to])); g != w {
						t.Errorf("got  %s\nwant %s", g, w)
					}
				})
			}
		}
	}
}
