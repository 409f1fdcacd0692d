//go:build unix

package editor_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// osPerm is the permission the OS reports for a file made with perm m.
func osPerm(m os.FileMode) os.FileMode { return m }

// permString is the editor's "mode" field for a file made with perm m.
func permString(m os.FileMode) string { return fmt.Sprintf("%04o", osPerm(m)) }

// The tests below are Unix-only: Windows has no permission bits (Go reports
// 0666 or 0444 from the read-only attribute; a user's %AppData% is protected
// by its ACL), and a symlink there needs a privilege users rarely hold.

func TestConfigKeys(t *testing.T) {
	t.Run("POOL-15/literal-key-written-0600-never-echoed", func(t *testing.T) {
		w := newWorld(t, "channels:\n  a: {api: anthropic, base_url: 'http://127.0.0.1:1', api_key_env: ENV_KEY}\npools:\n  p: {members: [a]}\n", 0o644)
		g := w.get()
		if g.Mode != "0644" {
			t.Fatalf("mode %s", g.Mode)
		}
		g.Doc["channels"].(map[string]any)["c"] = map[string]any{"api": "anthropic", "base_url": "http://127.0.0.1:5", "api_key": secretKey}
		st, _, _ := w.do("POST", "/pool/config/validate", mustJSON(g.Doc), nil)
		if st != 200 {
			t.Fatalf("validate %d", st)
		}
		st, out := w.put(g.Version, g.Doc)
		if st != 200 || !strings.Contains(out, `"mode_tightened": true`) {
			t.Fatalf("PUT: %d %s", st, out)
		}
		if mode(t, w.path) != 0o600 {
			t.Fatalf("a file with a literal key is %o", mode(t, w.path))
		}
		mustSub(t, w.file(), "api_key: "+secretKey)
		g2 := w.get()
		if strings.Contains(g2.YAML, secretKey) {
			t.Fatal("key sent back")
		}
		w.do("POST", "/pool/config/models?members=a,c", mustJSON(g2.Doc), nil)
	})
	t.Run("POOL-15/mode-kept-without-literal-key", func(t *testing.T) {
		w := newWorld(t, "channels:\n  a: {api: anthropic, base_url: 'http://127.0.0.1:1', api_key_env: ENV_KEY}\npools:\n  p: {members: [a]}\n", 0o640)
		g := w.get()
		g.Doc["pools"].(map[string]any)["p"].(map[string]any)["strategy"] = "failover"
		if st, out := w.put(g.Version, g.Doc); st != 200 {
			t.Fatalf("PUT: %d %s", st, out)
		}
		if mode(t, w.path) != 0o640 {
			t.Fatalf("mode %o, want 0640 kept", mode(t, w.path))
		}
	})
}

func TestConfigSymlink(t *testing.T) {
	t.Run("POOL-22/symlinked-file-target-replaced-link-kept", func(t *testing.T) {
		w := newWorld(t, commented, 0o600)
		real := w.path + ".real"
		if err := os.Rename(w.path, real); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(real, w.path); err != nil {
			t.Fatal(err)
		}
		g := w.get()
		g.Doc["pools"].(map[string]any)["p"].(map[string]any)["strategy"] = "failover"
		if st, out := w.put(g.Version, g.Doc); st != 200 {
			t.Fatalf("PUT: %d %s", st, out)
		}
		if fi, err := os.Lstat(w.path); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("the link was replaced: %v", err)
		}
		b, _ := os.ReadFile(real)
		mustSub(t, string(b), "strategy: failover")
		if bak, _ := os.ReadFile(real + ".bak"); string(bak) != commented {
			t.Fatal("no backup next to the target")
		}
	})
}
