package editor

import (
	"strings"
	"testing"
)

// TestProxySectionPasswordsMasked: the config file's proxy: section
// (SPEC OPS-7) holds gateway URLs; the editor's document never carries
// their passwords (SPEC POOL-15), and a save of the masked document keeps
// the passwords on disk, also when the page reorders the gateways.
func TestProxySectionPasswordsMasked(t *testing.T) {
	const file = "channels:\n  a: {api: anthropic, base_url: http://127.0.0.1:1, api_key_env: K}\n" +
		"proxy:\n  upstream-url: http://up:pw-upstream@127.0.0.1:3128\n  upstream-host: 'huser:pw-host@[::1'\n  gateway:\n    - http://u:pw-one@127.0.0.1:8080 # first\n    - v:pw-two@127.0.0.1:8081\n    - 'http://w:pw-three@[::1'\n"
	disk, err := parseDoc([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("OPS-7/editor-document-masks-gateway-passwords", func(t *testing.T) {
		out, err := encodeDoc(redact(disk), 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, pw := range []string{"pw-upstream", "pw-one", "pw-two", "pw-host", "pw-three"} {
			if strings.Contains(string(out), pw) {
				t.Fatalf("the editor's document carries %s:\n%s", pw, out)
			}
		}
		if !strings.Contains(string(out), "v:***@127.0.0.1:8081") || !strings.Contains(string(out), "http://up:***@127.0.0.1:3128") {
			t.Fatalf("passwords not shown as %s:\n%s", Placeholder, out)
		}
	})
	t.Run("OPS-7/masked-gateways-saved-back-keep-their-passwords", func(t *testing.T) {
		got := saveEdit(t, file, func(doc map[string]any) {
			p := doc["proxy"].(map[string]any)
			g := p["gateway"].([]any)
			p["gateway"] = []any{g[1], g[0], g[2]}
		})
		for _, want := range []string{"http://up:pw-upstream@127.0.0.1:3128", "- v:pw-two@127.0.0.1:8081\n", "- http://u:pw-one@127.0.0.1:8080 # first\n", "huser:pw-host@[::1", "http://w:pw-three@[::1"} {
			if !strings.Contains(got, want) {
				t.Fatalf("no %q in the saved file:\n%s", want, got)
			}
		}
		if strings.Contains(got, Placeholder) {
			t.Fatalf("the placeholder reached the file:\n%s", got)
		}
	})
}
