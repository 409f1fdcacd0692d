package settings_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/app/settings"
)

// TestReloadRacesAChange runs a change through the API and a reload of the
// file (what SIGHUP and the file watch call) at the same moment, round
// after round: whichever runs first, the value a 200 answered is the one
// that runs and the one in the file (SPEC OPS-7). A reload that read the
// file before taking the settings' lock applied the file as it was before
// the change, undoing a confirmed change.
func TestReloadRacesAChange(t *testing.T) {
	t.Run("OPS-7/put-answered-200-is-what-runs-and-what-is-on-disk", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(path, []byte("proxy:\n  cooldown-ms: 30000\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		in := newInstance(t, settings.Options{File: path, WriteBack: true, Sources: map[string]settings.Source{settings.CooldownMS: settings.SourceFile}})
		const rounds = 300
		lost := 0
		for i := range rounds {
			want := 1000 + i
			var wg sync.WaitGroup
			var code int
			var reloadErr error
			wg.Add(2)
			go func() {
				defer wg.Done()
				code, _ = in.put(t, fmt.Sprintf(`{"cooldown-ms": %d}`, want), "*")
			}()
			go func() {
				defer wg.Done()
				reloadErr = in.live.Reload()
			}()
			wg.Wait()
			if code != http.StatusOK || reloadErr != nil {
				t.Fatalf("round %d: PUT %d, reload %v", i, code, reloadErr)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			sec, err := settings.ReadSection(data, path)
			if err != nil {
				t.Fatal(err)
			}
			running := in.live.Current().Values.Int(settings.CooldownMS)
			if running != want || sec.Values.Int(settings.CooldownMS) != want {
				lost++
				t.Errorf("round %d: PUT %d answered 200; running %d, on disk %d", i, want, running, sec.Values.Int(settings.CooldownMS))
			}
		}
		if lost > 0 {
			t.Fatalf("%d of %d rounds lost the change", lost, rounds)
		}
	})
}

// TestFileErrorsWithholdValues: an error of the config file's proxy:
// section is logged and shown in the settings document (no token needed),
// so it never repeats the value: a key or password pasted in the wrong
// place stays in the file (SPEC OPS-7).
func TestFileErrorsWithholdValues(t *testing.T) {
	const secret = "sk-ant-api03-SECRETSECRET"
	for _, tc := range []struct{ name, text string }{
		{"OPS-7/key-pasted-as-cooldown-not-repeated", "proxy:\n  cooldown-ms: " + secret + "\n"},
		{"OPS-7/key-pasted-as-gateway-not-repeated", "proxy:\n  gateway: [" + secret + "]\n"},
		{"OPS-7/gateway-password-not-repeated", "proxy:\n  gateway: ['http://u:" + secret + "@127.0.0.1:99999']\n"},
		{"OPS-7/key-pasted-as-bool-not-repeated", "proxy:\n  verify-tls: " + secret + "\n"},
		{"OPS-7/key-pasted-as-health-url-not-repeated", "proxy:\n  health-url: " + secret + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(path, []byte(tc.text), 0o600); err != nil {
				t.Fatal(err)
			}
			in := newInstance(t, settings.Options{File: path})
			err := in.live.Reload()
			if err == nil {
				t.Fatal("a bad file reloaded")
			}
			doc := in.live.Document()
			if len(doc.FileErrors) == 0 || !strings.HasPrefix(doc.FileErrors[0], path+":2:") {
				t.Fatalf("file errors %q", doc.FileErrors)
			}
			for _, line := range append(doc.FileErrors, err.Error()) {
				if strings.Contains(line, "SECRETSECRET") {
					t.Fatalf("the error repeats the value: %s", line)
				}
			}
		})
	}
	t.Run("OPS-7/missing-file-keeps-the-settings", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(path, []byte("proxy:\n  cooldown-ms: 7000\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		in := newInstance(t, settings.Options{File: path})
		if err := in.live.Reload(); err != nil || in.live.Current().Values.Int(settings.CooldownMS) != 7000 {
			t.Fatalf("reload %v, cooldown %d", err, in.live.Current().Values.Int(settings.CooldownMS))
		}
		v := in.live.Document().Version
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		if err := in.live.Reload(); err == nil {
			t.Fatal("a missing file reloaded without an error")
		}
		doc := in.live.Document()
		if in.live.Current().Values.Int(settings.CooldownMS) != 7000 || doc.Version != v || len(doc.FileErrors) != 1 {
			t.Fatalf("a missing file changed the settings: cooldown %d, version %s → %s, errors %q", in.live.Current().Values.Int(settings.CooldownMS), v, doc.Version, doc.FileErrors)
		}
	})
}
