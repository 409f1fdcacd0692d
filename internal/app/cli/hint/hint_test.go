package hint

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSuggest(t *testing.T) {
	known := []string{"gateway", "print-config", "addr", "status", "h", "help"}
	for _, tc := range []struct{ typed, want string }{
		{"gatway", "gateway"}, {"gateawy", "gateway"}, {"adr", "addr"}, {"sttaus", "status"},
		{"p", ""}, {"print", ""}, {"verbose", ""}, {"c", ""}, {"model", ""},
	} {
		t.Run("LIS-5/suggest/"+tc.typed, func(t *testing.T) {
			if got := Suggest(tc.typed, known); got != tc.want {
				t.Fatalf("suggest(%q) = %q, want %q", tc.typed, got, tc.want)
			}
		})
	}
}
