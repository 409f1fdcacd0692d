package settings_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/app/settings"
)

// TestNumberAsTextEveryKey: every whole-number key takes a JSON number or
// the same number as a JSON string ("5", the text form `dual-proxy
// settings set` sends), read alike; an empty string is no number (null
// returns a key to its default) (docs/flags.md, SPEC OPS-7).
func TestNumberAsTextEveryKey(t *testing.T) {
	for _, k := range settings.Keys {
		if !k.Live || (k.Kind != settings.KindMS && k.Kind != settings.KindCount) {
			continue
		}
		n := max(k.Min, 1) + 1
		if n > k.Max {
			n = k.Max
		}
		t.Run("OPS-7/json-string-number/"+k.Name, func(t *testing.T) {
			for _, body := range []string{fmt.Sprintf(`{%q: "%d"}`, k.Name, n), fmt.Sprintf(`{%q: " %d "}`, k.Name, n), fmt.Sprintf(`{%q: %d}`, k.Name, n)} {
				in := newInstance(t, settings.Options{})
				if code, doc := in.put(t, body, in.version(t)); code != 200 || in.live.Current().Values.Int(k.Name) != n {
					t.Fatalf("%s: %d %v", body, code, doc["errors"])
				}
			}
			in := newInstance(t, settings.Options{})
			code, doc := in.put(t, fmt.Sprintf(`{%q: ""}`, k.Name), in.version(t))
			if got := strings.Join(fields(t, doc), " "); code != 400 || got != k.Name {
				t.Fatalf("an empty string: %d %v", code, doc)
			}
		})
	}
}
