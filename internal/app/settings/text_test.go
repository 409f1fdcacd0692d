package settings_test

import (
	"encoding/json"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/app/settings"
)

// TestTextOfANumberParsesBack pins that what `settings get` prints for a
// number key is accepted by `settings set` (SPEC OPS-7): the document
// decoded from JSON holds float64, and a whole one prints as digits.
func TestTextOfANumberParsesBack(t *testing.T) {
	start := startValues()
	for _, k := range settings.Keys {
		if k.Kind != settings.KindMS && k.Kind != settings.KindCount {
			continue
		}
		for _, n := range []int{start.Int(k.Name), 3600000, 604800000} {
			t.Run("OPS-7/get-set-round-trip/"+k.Name, func(t *testing.T) {
				raw, _ := json.Marshal(n)
				var decoded any
				if err := json.Unmarshal(raw, &decoded); err != nil {
					t.Fatal(err)
				}
				text := settings.Text(decoded)
				got, err := settings.ParseText(k, text)
				if err != nil || got != n {
					t.Fatalf("ParseText(%q) = %v, %v; want %d", text, got, err, n)
				}
			})
		}
	}
}
