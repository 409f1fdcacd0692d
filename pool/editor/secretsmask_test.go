package editor_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestHealthAndStateSecretsMasked: the editor's document shows the health
// URL's password and query and the shared state URL's password masked, as
// the settings API and the status document do (SPEC POOL-15, POOL-22), and
// a save of the masked document keeps the stored secrets in the file.
func TestHealthAndStateSecretsMasked(t *testing.T) {
	const (
		health = "https://u:HPASS-SECRET@127.0.0.1:9/h?token=HQ-SECRET"
		redis  = "redis://ru:REDISPASS-SECRET@127.0.0.1:1/0"
	)
	secrets := []string{"HPASS-SECRET", "HQ-SECRET", "REDISPASS-SECRET"}
	base := "channels:\n  a: {api: anthropic, base_url: http://127.0.0.1:1, api_key_env: ENV_KEY}\n" +
		"pools:\n  p: {members: [a]}\n" +
		"proxy:\n  health-url: \"" + health + "\" # probe\n"
	for _, tc := range []struct{ name, state string }{
		{"POOL-22/health-url-and-state-url-secrets-masked-and-kept", "state: \"" + redis + "\" # shared\n"},
		{"POOL-22/health-url-and-state-mapping-url-secrets-masked-and-kept", "state:\n  url: \"" + redis + "\"\n  timeout_ms: 5000\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := base + tc.state
			w := newWorld(t, file, 0o600)
			g := w.get()
			doc, _ := json.Marshal(g.Doc)
			for _, s := range secrets {
				if strings.Contains(g.YAML, s) || strings.Contains(string(doc), s) {
					t.Fatalf("GET /pool/config shows %s:\n%s\n%s", s, g.YAML, doc)
				}
			}
			mustSub(t, g.YAML, "https://u:***@127.0.0.1:9/h?***")
			mustSub(t, g.YAML, "redis://ru:***@127.0.0.1:1/0")
			st, out := w.put(g.Version, g.Doc)
			if st != 200 {
				t.Fatalf("PUT: %d %s", st, out)
			}
			f := w.file()
			mustSub(t, f, health)
			mustSub(t, f, redis)
			if strings.Contains(f, "***") {
				t.Fatalf("the mask reached the file:\n%s", f)
			}
			for _, s := range secrets {
				if strings.Contains(out, s) {
					t.Fatalf("PUT answer shows %s: %s", s, out)
				}
			}
		})
	}
}
