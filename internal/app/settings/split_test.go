package settings_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/app/settings"
)

// TestGatewayCommaInPasswordKept pins that a comma in a gateway's
// password never splits the gateway (SPEC GW-3, GW-4, OPS-7): a JSON array
// item is one gateway, and the comma-separated text form keeps a comma
// inside a URL's userinfo.
func TestGatewayCommaInPasswordKept(t *testing.T) {
	key, _ := settings.Lookup(settings.Gateway)
	t.Run("GW-4/json-array-item-is-one-gateway", func(t *testing.T) {
		got, err := settings.ParseJSON(key, json.RawMessage(`["http://user:pa,ss@127.0.0.1:18511"]`))
		if err != nil || !slices.Equal(got.([]string), []string{"http://user:pa,ss@127.0.0.1:18511"}) {
			t.Fatalf("ParseJSON = %v, %v", got, err)
		}
	})
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"GW-4/text-comma-in-password", "http://alice:hunter,two@127.0.0.1:18511", []string{"http://alice:hunter,two@127.0.0.1:18511"}},
		{"GW-4/text-comma-in-password-then-another", "http://u:pa,ss@h:1, http://h2:2", []string{"http://u:pa,ss@h:1", "http://h2:2"}},
		{"GW-3/text-plain-list-split", "h1:1,h2:2,http://h3:3", []string{"h1:1", "h2:2", "http://h3:3"}},
		{"GW-3/text-bare-with-credentials-split", "h1:1,u:p@h2:2", []string{"h1:1", "u:p@h2:2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := settings.ParseText(key, tc.text)
			if err != nil || !slices.Equal(got.([]string), tc.want) {
				t.Fatalf("ParseText(%q) = %q, %v; want %q", tc.text, got, err, tc.want)
			}
		})
	}
}
