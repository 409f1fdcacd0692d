package editor_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/config"
	"github.com/dual-proxy/dual-proxy/pool/editor"
)

func TestCreateFromNothing(t *testing.T) {
	t.Run("POOL-22/no-file-yet-a-save-creates-it-0600", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "dual-proxy", "config.yaml") // the directory is missing too
		w := serveWorld(t, path, &config.Config{})
		st, _, body := w.do("GET", "/pool/config", "", nil)
		var g struct {
			Version string
			Exists  bool
			Doc     map[string]any
		}
		_ = json.Unmarshal([]byte(body), &g)
		if st != 200 || g.Exists || g.Version != editor.Version(nil) || len(g.Doc) != 0 {
			t.Fatalf("GET without a file: %d %s", st, body)
		}
		doc := map[string]any{
			"channels": map[string]any{"a": map[string]any{"api": "anthropic", "base_url": "http://127.0.0.1:1", "api_key": secretKey}},
			"pools":    map[string]any{"p": map[string]any{"members": []string{"a"}}},
		}
		st, out := w.put(g.Version, doc)
		var res struct {
			Created, Applied bool
			Backup, Mode     string
		}
		_ = json.Unmarshal([]byte(out), &res)
		if st != 200 || !res.Created || !res.Applied || res.Backup != "" || res.Mode != permString(0o600) {
			t.Fatalf("PUT: %d %s", st, out)
		}
		if mode(t, path) != osPerm(0o600) || !strings.Contains(w.file(), "api_key: "+secretKey) {
			t.Fatalf("file %04o:\n%s", mode(t, path), w.file())
		}
		if ps := w.p.Status().Pools; len(ps) != 1 || ps[0].ID != "p" {
			t.Fatalf("not applied: %+v", ps)
		}
		// A second create with the no-file version is a conflict now.
		if st, out := w.put(editor.Version(nil), doc); st != 409 {
			t.Fatalf("second create: %d %s", st, out)
		}
	})

	t.Run("POOL-22/file-without-pools-gets-its-first-pool", func(t *testing.T) {
		const chansOnly = "# only channels so far\nchannels:\n  a: {api: anthropic, base_url: http://127.0.0.1:1, api_key: " + secretKey + "} # first\n"
		w := newWorld(t, chansOnly, 0o600)
		g := w.get()
		g.Doc["pools"] = map[string]any{"p": map[string]any{"members": []string{"a"}, "strategy": "failover"}}
		if st, out := w.put(g.Version, g.Doc); st != 200 {
			t.Fatalf("PUT: %d %s", st, out)
		}
		f := w.file()
		mustSub(t, f, "# only channels so far\nchannels:\n  a: {api: anthropic, ")
		mustSub(t, f, "api_key: "+secretKey+"} # first\npools:\n  p:\n")
		if ps := w.p.Status().Pools; len(ps) != 1 || ps[0].ID != "p" {
			t.Fatalf("not applied: %+v", ps)
		}
	})
}

func TestRename(t *testing.T) {
	rename := func(w *world, version, body string) (int, string) {
		w.t.Helper()
		st, _, out := w.do("POST", "/pool/config/rename", body, map[string]string{"If-Match": `"` + version + `"`})
		return st, out
	}
	t.Run("POOL-22/rename-channel-updates-members-targets-keeps-comments-order", func(t *testing.T) {
		w := newWorld(t, commented, 0o600)
		g := w.get()
		st, out := rename(w, g.Version, `{"kind": "channel", "from": "b", "to": "bee"}`)
		if st != 200 || !strings.Contains(out, `"references": 2`) || !strings.Contains(out, `"applied": true`) {
			t.Fatalf("rename: %d %s", st, out)
		}
		want := strings.NewReplacer("  b: {api", "  bee: {api", "members: [a, b]", "members: [a, bee]", "targets: {b: m-b}", "targets: {bee: m-b}").Replace(commented)
		if got := w.file(); got != want {
			t.Fatalf("file:\n%s\nwant:\n%s", got, want)
		}
		if bak, _ := os.ReadFile(w.path + ".bak"); string(bak) != commented {
			t.Fatalf("backup:\n%s", bak)
		}
		if ps := w.p.Status().Pools; len(ps) != 1 || ps[0].Members[1].ID != "bee" {
			t.Fatalf("not applied: %+v", ps)
		}
	})
	t.Run("POOL-22/rename-pool-keeps-its-comments-and-place", func(t *testing.T) {
		w := newWorld(t, commented, 0o600)
		st, out := rename(w, w.get().Version, `{"kind": "pool", "from": "p", "to": "work"}`)
		if st != 200 {
			t.Fatalf("rename: %d %s", st, out)
		}
		if got, want := w.file(), strings.Replace(commented, "\n  p:\n", "\n  work:\n", 1); got != want {
			t.Fatalf("file:\n%s", got)
		}
		if ps := w.p.Status().Pools; len(ps) != 1 || ps[0].ID != "work" {
			t.Fatalf("not applied: %+v", ps)
		}
	})
	t.Run("POOL-22/rename-refusals-leave-the-file", func(t *testing.T) {
		w := newWorld(t, commented, 0o600)
		v := w.get().Version
		for _, c := range []struct {
			body string
			st   int
			want string
		}{
			{`{"kind": "channel", "from": "b", "to": "a"}`, 400, `channel \"a\" exists already`},
			{`{"kind": "channel", "from": "zz", "to": "y"}`, 400, `no channel \"zz\" to rename`},
			{`{"kind": "channel", "from": "a", "to": "p"}`, 400, `pool id \"p\" equals a channel id`},
			{`{"kind": "pool", "from": "p", "to": "status"}`, 400, `is reserved`},
			{`{"kind": "pool", "from": "p", "to": ""}`, 400, `the new id is empty`},
			{`{"kind": "model", "from": "m", "to": "n"}`, 400, `want channel or pool`},
		} {
			if st, out := rename(w, v, c.body); st != c.st || !strings.Contains(out, c.want) {
				t.Errorf("%s: %d %s", c.body, st, out)
			}
		}
		if st, _ := rename(w, "sha256:stale", `{"kind": "pool", "from": "p", "to": "q"}`); st != 409 {
			t.Errorf("stale version: %d", st)
		}
		if st, _, _ := w.do("POST", "/pool/config/rename", `{"kind": "pool", "from": "p", "to": "q"}`, nil); st != 428 {
			t.Errorf("no If-Match: %d", st)
		}
		if st, _, _ := w.do("POST", "/pool/config/rename", `{"kind": "pool", "from": "p", "to": "q"}`, map[string]string{"If-Match": v, "Authorization": ""}); st != 401 {
			t.Errorf("no token: %d", st)
		}
		if w.file() != commented {
			t.Fatal("a refused rename changed the file")
		}
	})
}
