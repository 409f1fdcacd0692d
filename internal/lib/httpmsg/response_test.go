package httpmsg

import (
	"testing"
)

func TestReason(t *testing.T) {
	for _, tc := range []struct {
		name     string
		code     int
		received string
		want     string
	}{
		{"HTTP-5/known-code-standard-text", 200, "Totally Fine", "OK"},
		{"HTTP-5/known-code-bare-cr", 200, "O\rK", "OK"},
		{"HTTP-5/unknown-code-keeps-clean-reason", 529, "Overloaded", "Overloaded"},
		{"HTTP-5/unknown-code-control-chars-removed", 599, "Bad\x00\x1b[31m\r\nX-Injected: 1\x7f", "Bad[31mX-Injected: 1"},
		{"HTTP-5/unknown-code-obs-text-kept", 599, "caf\xc3\xa9", "caf\xc3\xa9"},
		{"HTTP-5/unknown-code-empty", 599, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Reason(tc.code, tc.received); got != tc.want {
				t.Fatalf("Reason(%d, %q) = %q, want %q", tc.code, tc.received, got, tc.want)
			}
		})
	}
}

// FuzzReason checks that no reason phrase can carry a control character.
func FuzzReason(f *testing.F) {
	f.Add(599, "Bad\r\nX: 1")
	f.Add(200, "OK")
	f.Fuzz(func(t *testing.T, code int, received string) {
		for _, c := range []byte(Reason(code, received)) {
			if !reasonByte(c) {
				t.Fatalf("Reason(%d, %q) holds %q", code, received, c)
			}
		}
	})
}
