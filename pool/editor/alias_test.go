package editor_test

import (
	"strings"
	"testing"
)

// TestRedactThroughAliases: a file whose channel key is reachable through a
// YAML alias never returns the key on GET (the bug class: the redacted
// copy's aliases pointing back at the original, unredacted nodes).
func TestRedactThroughAliases(t *testing.T) {
	for _, c := range []struct{ name, yaml string }{
		{"POOL-15/channel-that-is-an-alias-of-another",
			"channels:\n  a: &a\n    api: anthropic\n    base_url: http://127.0.0.1:1\n    api_key: " + secretKey + "\n  b: *a\npools:\n  p: {members: [a, b]}\n"},
		{"POOL-15/key-anchor-aliased-elsewhere",
			"channels:\n  a:\n    api: anthropic\n    base_url: http://127.0.0.1:1\n    api_key: &k " + secretKey + "\npools:\n  p: {members: [a], display_name: *k}\n"},
		{"POOL-15/key-that-is-an-alias-of-a-value-elsewhere",
			"pools:\n  p: {members: [a], display_name: &k " + secretKey + "}\nchannels:\n  a:\n    api: anthropic\n    base_url: http://127.0.0.1:1\n    api_key: *k\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, c.yaml, 0o600)
			st, _, body := w.do("GET", "/pool/config", "", nil)
			if st != 200 {
				t.Fatalf("GET: %d %s", st, body)
			}
			if strings.Contains(body, secretKey) {
				t.Errorf("GET carried the key: %.400s", body)
			}
		})
	}
}
