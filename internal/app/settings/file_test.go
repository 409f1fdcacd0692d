package settings_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/app/settings"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

const sampleFile = `# my dual-proxy setup
channels:
  a: {api: anthropic, base_url: http://127.0.0.1:9, api_key_env: A_KEY}

# the path
proxy:
  # the office gateway first
  gateway: [127.0.0.1:3128]   # keep this list short
  cooldown-ms: 30000
pools:
  p: {members: [a]}
`

func TestWriteSection(t *testing.T) {
	t.Run("OPS-7/write-back-keeps-comments-and-order", func(t *testing.T) {
		out, err := settings.WriteSection([]byte(sampleFile), map[string]any{
			settings.Gateway: []string{"127.0.0.1:3128", "socks5://127.0.0.1:1080"}, settings.CooldownMS: 5000, settings.PreferDirect: []string{"*.lan"},
		})
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Replace(sampleFile, "gateway: [127.0.0.1:3128]   # keep", "gateway: [127.0.0.1:3128, socks5://127.0.0.1:1080]   # keep", 1)
		want = strings.Replace(want, "cooldown-ms: 30000\n", "cooldown-ms: 5000\n  prefer-direct: ['*.lan']\n", 1)
		if string(out) != want {
			t.Fatalf("got\n%s\nwant\n%s", out, want)
		}
		sec, err := settings.ReadSection(out, "f.yaml")
		if err != nil || settings.Text(sec.Values[settings.PreferDirect]) != "*.lan" || sec.Values.Int(settings.CooldownMS) != 5000 {
			t.Fatalf("read back %v %v", sec, err)
		}
	})
	t.Run("OPS-7/section-appended-and-key-removed", func(t *testing.T) {
		out, err := settings.WriteSection([]byte("# only pools\npools: {}\n"), map[string]any{settings.VerifyTLS: false})
		if err != nil || string(out) != "# only pools\npools: {}\nproxy:\n  verify-tls: false\n" {
			t.Fatalf("%q %v", out, err)
		}
		out, err = settings.WriteSection([]byte(sampleFile), map[string]any{settings.CooldownMS: nil})
		if err != nil || strings.Contains(string(out), "cooldown-ms") || !strings.Contains(string(out), "# keep this list short") {
			t.Fatalf("%s %v", out, err)
		}
	})
}

func TestReadSectionErrors(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"OPS-7/unknown-key-at-its-line", "proxy:\n  cooldown: 5\n", `f.yaml:2:3: proxy.cooldown: unknown setting "cooldown" (did you mean cooldown-ms?)`},
		{"OPS-7/fixed-key-in-the-file", "proxy:\n  listen-port: 5\n", "f.yaml:2:3: proxy.listen-port: not a live setting: give --listen-port on the command line"},
		{"OPS-7/bad-value-at-its-value", "proxy:\n  verify-tls: maybe\n", "f.yaml:2:15: proxy.verify-tls: want true or false"},
		{"OPS-7/null-gateway-item-refused-at-the-item", "proxy:\n  gateway: [127.0.0.1:3128, null]\n", "f.yaml:2:29: proxy.gateway[1]: null is not a value"},
		{"OPS-7/empty-gateway-item-refused-at-the-item", "proxy:\n  gateway:\n    - ''\n", "f.yaml:3:7: proxy.gateway[0]: empty item"},
		{"OPS-7/syntax-error", "proxy:\n  gateway: [a\n", "f.yaml:"},
		{"OPS-7/not-a-mapping", "proxy: 5\n", "f.yaml:1:8: proxy: want a mapping"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := settings.ReadSection([]byte(tc.text), "f.yaml")
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

func TestFileSettings(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	write := func(t *testing.T, text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("OPS-7/put-writes-back-with-comments-and-0600", func(t *testing.T) {
		write(t, sampleFile)
		in := newInstance(t, settings.Options{File: path, WriteBack: true, Values: with(startValues(), settings.Gateway, []string{"127.0.0.1:3128"}), Sources: map[string]settings.Source{settings.Gateway: settings.SourceFile, settings.CooldownMS: settings.SourceFile}})
		code, doc := in.put(t, `{"gateway": ["127.0.0.1:3128", "http://u:pw@127.0.0.1:8080"]}`, in.version(t))
		if code != 200 {
			t.Fatal(code, doc)
		}
		saved := doc["saved"].(map[string]any)
		data, _ := os.ReadFile(path)
		if !strings.Contains(string(data), "gateway: [127.0.0.1:3128, 'http://u:pw@127.0.0.1:8080']   # keep this list short") &&
			!strings.Contains(string(data), "gateway: [127.0.0.1:3128, http://u:pw@127.0.0.1:8080]   # keep this list short") {
			t.Fatalf("file\n%s", data)
		}
		if !strings.Contains(string(data), "# the office gateway first") || !strings.Contains(string(data), "pools:\n  p: {members: [a]}") {
			t.Fatalf("comments or the pool lost:\n%s", data)
		}
		fi, _ := os.Stat(path)
		if runtime.GOOS != "windows" && (fi.Mode().Perm() != 0o600 || saved["mode"] != "0600") {
			t.Fatalf("mode %v, saved %v", fi.Mode(), saved)
		}
		if bak, _ := os.ReadFile(path + ".bak"); string(bak) != sampleFile || saved["backup"] != path+".bak" {
			t.Fatalf("backup %q", bak)
		}
	})
	t.Run("OPS-7/reload-applies-the-edited-file-flags-win", func(t *testing.T) {
		write(t, sampleFile)
		in := newInstance(t, settings.Options{File: path, Sources: map[string]settings.Source{settings.RaceDelayMS: settings.SourceFlag}})
		v := in.version(t)
		write(t, strings.Replace(sampleFile, "cooldown-ms: 30000", "cooldown-ms: 7000\n  race-delay-ms: 1", 1))
		if err := in.live.Reload(); err != nil {
			t.Fatal(err)
		}
		cur := in.live.Current().Values
		if cur.Int(settings.CooldownMS) != 7000 || cur.Int(settings.RaceDelayMS) != 250 || settings.Text(cur[settings.Gateway]) != "127.0.0.1:3128" {
			t.Fatalf("after reload %v", cur)
		}
		doc := in.live.Document()
		if doc.Version == v || doc.Sources[settings.CooldownMS] != settings.SourceFile || doc.Sources[settings.RaceDelayMS] != settings.SourceFlag {
			t.Fatalf("doc %+v", doc)
		}
		write(t, strings.Replace(sampleFile, "  cooldown-ms: 30000\n", "", 1))
		if err := in.live.Reload(); err != nil || in.live.Current().Values.Int(settings.CooldownMS) != 30000 {
			t.Fatalf("a key removed from the file returns to its default: %v %v", err, in.live.Current().Values[settings.CooldownMS])
		}
	})
	t.Run("OPS-7/bad-file-keeps-the-settings-with-errors-at-file-line-col", func(t *testing.T) {
		write(t, sampleFile)
		in := newInstance(t, settings.Options{File: path})
		if err := in.live.Reload(); err != nil {
			t.Fatal(err)
		}
		before := in.live.Document()
		write(t, strings.Replace(sampleFile, "cooldown-ms: 30000", "cooldown-ms: -1\n  fast-fail-ms: x", 1))
		if err := in.live.Reload(); err == nil {
			t.Fatal("a bad file reloaded")
		}
		doc := in.live.Document()
		if doc.Version != before.Version || len(doc.FileErrors) != 1 || doc.FileErrors[0] != path+":10:17: proxy.fast-fail-ms: want a whole number" {
			t.Fatalf("errors %q", doc.FileErrors)
		}
		write(t, strings.Replace(sampleFile, "cooldown-ms: 30000", "cooldown-ms: -1", 1))
		if err := in.live.Reload(); err == nil || in.live.Document().FileErrors[0] != path+":9:3: proxy.cooldown-ms: must be 0-604800000, got -1" {
			t.Fatalf("range error %v %q", err, in.live.Document().FileErrors)
		}
		write(t, sampleFile)
		if err := in.live.Reload(); err != nil || in.live.Document().FileErrors != nil {
			t.Fatalf("a good file clears the errors: %v", err)
		}
	})
}

func TestPoolConfigAcceptsTheProxySection(t *testing.T) {
	t.Run("OPS-7/pool-reader-skips-proxy-section", func(t *testing.T) {
		cfg, err := config.ParseConfig([]byte(sampleFile), func(string) string { return "k" })
		if err != nil || len(cfg.Pools) != 1 {
			t.Fatalf("%v %v", cfg, err)
		}
	})
}

// TestFileNullIsNotSet: null in the file's proxy: section (`key:`,
// `key: ~`, `key: null`) is the key not set there, its default, as null
// is in the settings API; ” and [] are "none" (SPEC OPS-7: a setting means
// the same from every source).
func TestFileNullIsNotSet(t *testing.T) {
	t.Run("OPS-7/null-in-the-file-is-the-default", func(t *testing.T) {
		text := "proxy:\n  upstream-url:\n  cooldown-ms: ~\n  gateway: null\n  verify-tls:\n  health-url: null\n"
		sec, err := settings.ReadSection([]byte(text), "f.yaml")
		if err != nil {
			t.Fatalf("a null value refused: %v", err)
		}
		for _, k := range []string{settings.UpstreamURL, settings.CooldownMS, settings.Gateway, settings.VerifyTLS, settings.HealthURL} {
			if v, ok := sec.Values[k]; ok {
				t.Errorf("%s: null reads as %#v; want the key not set (its default)", k, v)
			}
		}
	})
	t.Run("OPS-7/empty-string-in-the-file-is-none", func(t *testing.T) {
		sec, err := settings.ReadSection([]byte("proxy:\n  upstream-url: ''\n  gateway: []\n"), "f.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := sec.Values[settings.UpstreamURL]; !ok || v != "" {
			t.Errorf("upstream-url: '' reads as %#v (set %v); want \"\" (no first gateway)", v, ok)
		}
		if v, ok := sec.Values[settings.Gateway]; !ok || len(v.([]string)) != 0 {
			t.Errorf("gateway: [] reads as %#v (set %v); want an empty list", v, ok)
		}
	})
}
