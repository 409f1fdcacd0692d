package gemini

import (
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
)

func TestStripThoughtSignatures(t *testing.T) {
	foreign := neutral.SigKey("gB")
	keep := func(k string) bool { return k != foreign }
	t.Run("POOL-18/foreign-thought-signature-becomes-placeholder", func(t *testing.T) {
		body := `{"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"text":"x","thought":true},{"functionCall":{"name":"f","args":{}},"thoughtSignature":"gB"}]},` +
			`{"role":"user","parts":[{"functionResponse":{"name":"f","response":{}}}]},{"role":"model","parts":[{"text":"y","thoughtSignature":"gA"}]}]}`
		out := string(stripThoughtSignatures([]byte(body), keep))
		want := strings.Replace(body, `"thoughtSignature":"gB"`, `"thoughtSignature":"skip_thought_signature_validator"`, 1)
		if out != want {
			t.Fatalf("got  %s\nwant %s", out, want)
		}
		if keys := geminiRequestSigKeys([]byte(want)); len(keys) != 1 || keys[0] != neutral.SigKey("gA") {
			t.Fatalf("keys %v", keys)
		}
	})
}
