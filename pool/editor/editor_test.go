package editor_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool"
	"github.com/dual-proxy/dual-proxy/pool/config"
	"github.com/dual-proxy/dual-proxy/pool/editor"
)

// commented is a file with comments everywhere, a literal key, an env key
// and a base_url password.
const commented = `# dual-proxy pool configuration
channels:
  # the first channel
  a:
    api: anthropic
    base_url: http://127.0.0.1:1
    api_key: ` + secretKey + ` # literal key
  b: {api: openai-chat, base_url: "http://user:` + urlPass + `@127.0.0.1:2", api_key_env: ENV_KEY}
pools:
  p:
    display_name: First pool # shown on the page
    strategy: sticky
    members: [a, b] # order matters
    models:
      # the main model
      - id: m
        targets: {b: m-b}
# end of file
`

func TestConfigRoundTrip(t *testing.T) {
	t.Run("POOL-22/round-trip-keeps-comments-order-key-mode-and-applies", func(t *testing.T) {
		w := newWorld(t, commented, 0o600)
		g := w.get()
		if g.Version != editor.Version([]byte(commented)) || g.Mode != permString(0o600) {
			t.Fatalf("version %s mode %s", g.Version, g.Mode)
		}
		mustSub(t, g.YAML, "# the first channel")
		mustSub(t, g.YAML, "api_key: '***'")
		mustSub(t, g.YAML, "user:***@127.0.0.1:2")
		p := g.Doc["pools"].(map[string]any)["p"].(map[string]any)
		p["display_name"] = "Renamed pool"
		g.Doc["pools"].(map[string]any)["q"] = map[string]any{"display_name": "New", "strategy": "failover", "members": []string{"b", "a"}}
		st, out := w.put(g.Version, g.Doc)
		if st != 200 {
			t.Fatalf("PUT: %d %s", st, out)
		}
		var res struct {
			Version, Mode, Backup string
			Applied               bool
		}
		_ = json.Unmarshal([]byte(out), &res)
		f := w.file()
		for _, c := range []string{"# dual-proxy pool configuration", "# the first channel", "# literal key",
			"# shown on the page", "# order matters", "# the main model", "# end of file", "display_name: Renamed pool",
			"api_key: " + secretKey, "user:" + urlPass + "@", "api_key_env: ENV_KEY", "targets: {b: m-b}"} {
			mustSub(t, f, c)
		}
		order := []string{"channels:", "  a:", "api: anthropic", "base_url: http://127.0.0.1:1", "api_key:", "  b:",
			"pools:", "  p:", "display_name: Renamed", "strategy: sticky", "members: [a, b]", "models:", "  q:", "members: [b, a]", "strategy: failover"}
		at := 0
		for _, o := range order {
			i := strings.Index(f[at:], o)
			if i < 0 {
				t.Fatalf("key order: %q not after position %d in\n%s", o, at, f)
			}
			at += i
		}
		if res.Version != editor.Version([]byte(f)) || !res.Applied || res.Mode != permString(0o600) || mode(t, w.path) != osPerm(0o600) {
			t.Fatalf("result %+v, mode %o", res, mode(t, w.path))
		}
		bak, err := os.ReadFile(w.path + ".bak")
		if err != nil || string(bak) != commented || mode(t, w.path+".bak") != osPerm(0o600) {
			t.Fatalf("backup: %v %o %q", err, mode(t, w.path+".bak"), bak)
		}
		if st, _, body := w.do("GET", "/pool/q/v1/models", "", nil); st != 200 {
			t.Fatalf("POOL-16: the saved pool q is not served: %d %s", st, body)
		}
		if pc := w.p.Status(); len(pc.Pools) != 2 || pc.Pools[0].DisplayName != "Renamed pool" {
			t.Fatalf("POOL-16: not applied in place: %+v", pc.Pools)
		}
	})

	t.Run("POOL-22/unchanged-document-keeps-the-file", func(t *testing.T) {
		w := newWorld(t, commented, 0o600)
		g := w.get()
		if st, out := w.put(g.Version, g.Doc); st != 200 {
			t.Fatalf("PUT: %d %s", st, out)
		}
		if g2 := w.get(); g2.YAML != g.YAML {
			t.Fatalf("an unchanged document changed the file:\n%s\n---\n%s", g.YAML, g2.YAML)
		}
	})

	t.Run("POOL-22/save-rewrites-only-the-edited-line", func(t *testing.T) {
		// A save must not re-quote the URL of every flow
		// mapping or re-indent the file: only the edited line changes.
		file := "channels:\n  a:   {api: anthropic, base_url: http://127.0.0.1:1/v1, api_key: " + secretKey + "}   # first\n" +
			"  b:   {api: openai-chat, base_url: http://127.0.0.1:2/v1, api_key_env: ENV_KEY}\npools:\n  p:\n    members: [a, b]     # order\n"
		w := newWorld(t, file, 0o600)
		g := w.get()
		if g.YAML != strings.Replace(file, secretKey, "'***'", 1) {
			t.Fatalf("GET's yaml is not the file with the key masked:\n%s", g.YAML)
		}
		g.Doc["pools"].(map[string]any)["p"].(map[string]any)["strategy"] = "failover"
		g.Doc["channels"].(map[string]any)["b"].(map[string]any)["base_url"] = "http://127.0.0.1:3/v1"
		if st, out := w.put(g.Version, g.Doc); st != 200 {
			t.Fatalf("PUT: %d %s", st, out)
		}
		want := strings.NewReplacer("127.0.0.1:2/v1", "127.0.0.1:3/v1", "# order\n", "# order\n    strategy: failover\n").Replace(file)
		if f := w.file(); f != want {
			t.Fatalf("saved\n%s\nwant\n%s", f, want)
		}
	})

	t.Run("POOL-22/yaml-body-with-comments", func(t *testing.T) {
		w := newWorld(t, commented, 0o600)
		g := w.get()
		edited := strings.Replace(g.YAML, "strategy: sticky", "strategy: round-robin # rotate", 1)
		if st, out := w.put(g.Version, edited); st != 200 {
			t.Fatalf("PUT: %d %s", st, out)
		}
		f := w.file()
		mustSub(t, f, "strategy: round-robin # rotate")
		mustSub(t, f, "api_key: "+secretKey)
	})
}

func TestConfigInvalid(t *testing.T) {
	t.Run("POOL-3/invalid-edit-400-names-every-path-file-unchanged", func(t *testing.T) {
		w := newWorld(t, commented, 0o600)
		g := w.get()
		chans := g.Doc["channels"].(map[string]any)
		chans["a"].(map[string]any)["base_url"] = "ftp://wrong"
		p := g.Doc["pools"].(map[string]any)["p"].(map[string]any)
		p["members"] = []string{"a", "nosuch"}
		p["strategy"] = "random"
		st, out := w.put(g.Version, g.Doc)
		if st != 400 {
			t.Fatalf("PUT: %d %s", st, out)
		}
		var res struct{ Errors []editor.FieldError }
		_ = json.Unmarshal([]byte(out), &res)
		paths := map[string]bool{}
		for _, e := range res.Errors {
			paths[e.Path] = true
		}
		for _, want := range []string{"channels.a.base_url", "pools.p.strategy"} {
			if !paths[want] {
				t.Errorf("no error at %s: %+v", want, res.Errors)
			}
		}
		if w.file() != commented {
			t.Fatal("an invalid edit changed the file")
		}
		if _, err := os.Stat(w.path + ".bak"); err == nil {
			t.Fatal("an invalid edit wrote a backup")
		}
		st, _, body := w.do("POST", "/pool/config/validate", out, nil)
		_ = st
		_ = body
	})

	t.Run("POOL-3/validate-lists-errors-with-paths", func(t *testing.T) {
		w := newWorld(t, commented, 0o600)
		doc := `{"channels": {"a": {"api": "anthropic", "base_url": "nope", "api_key": "***"}, "c": {"api": "klingon", "base_url": "http://127.0.0.1:3", "api_key": "k-new"}}, "pools": {"p": {"members": ["a", "ghost"]}, "status": {"members": ["a"]}}}`
		st, _, out := w.do("POST", "/pool/config/validate", doc, nil)
		if st != 200 {
			t.Fatalf("validate: %d %s", st, out)
		}
		var res struct {
			OK     bool
			Errors []editor.FieldError
		}
		_ = json.Unmarshal([]byte(out), &res)
		got := map[string]string{}
		for _, e := range res.Errors {
			got[e.Path] = e.Message
		}
		for _, want := range []string{"channels.a.base_url", "channels.c.api", "pools.p.members[1]", "pools.status"} {
			if _, ok := got[want]; !ok {
				t.Errorf("no error at %s: %+v", want, res.Errors)
			}
		}
		if res.OK || w.file() != commented {
			t.Fatal("validate said ok or changed the file")
		}
	})

	t.Run("POOL-3/duplicate-key-in-edit-names-its-line", func(t *testing.T) {
		w := newWorld(t, commented, 0o600)
		g := w.get()
		doc := "channels:\n  a: {api: anthropic, base_url: http://127.0.0.1:1, api_key: '***'}\npools:\n  p: {members: [a]}\n  p: {members: [a], strategy: failover}\n"
		st, out := w.put(g.Version, doc)
		var res struct{ Errors []editor.FieldError }
		_ = json.Unmarshal([]byte(out), &res)
		want := editor.FieldError{Path: "pools.p", Message: "duplicate key (first at line 4)", Line: 5, Column: 3}
		if st != 400 || len(res.Errors) != 1 || res.Errors[0] != want || w.file() != commented {
			t.Fatalf("PUT: %d %s", st, out)
		}
	})

	t.Run("POOL-3/duplicate-key-on-disk-names-its-line", func(t *testing.T) {
		w := newWorld(t, commented, 0o600)
		if err := os.WriteFile(w.path, []byte(commented+"channels: {}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		st, _, out := w.do("GET", "/pool/config", "", nil)
		if st != 500 || !strings.Contains(out, "channels: duplicate key (first at line 2) (line 19, column 1)") {
			t.Fatalf("GET: %d %s", st, out)
		}
	})

	t.Run("POOL-3/validate-errors-carry-line-and-column", func(t *testing.T) {
		w := newWorld(t, commented, 0o600)
		doc := "channels:\n  a: {api: anthropic, base_url: http://127.0.0.1:1, api_key: '***', colour: red}\npools:\n  p: {members: [a, zz]}\n"
		_, _, out := w.do("POST", "/pool/config/validate", doc, nil)
		var res struct{ Errors []editor.FieldError }
		_ = json.Unmarshal([]byte(out), &res)
		if len(res.Errors) != 2 || res.Errors[0].Path != "channels.a.colour" || res.Errors[1].Path != "pools.p.members[1]" {
			t.Fatalf("validate: %s", out)
		}
		for _, e := range res.Errors {
			if e.Line == 0 || e.Column == 0 {
				t.Errorf("no position: %+v", e)
			}
		}
	})

	t.Run("POOL-15/placeholder-without-stored-key", func(t *testing.T) {
		w := newWorld(t, commented, 0o600)
		g := w.get()
		g.Doc["channels"].(map[string]any)["z"] = map[string]any{"api": "anthropic", "base_url": "http://127.0.0.1:4", "api_key": "***"}
		st, out := w.put(g.Version, g.Doc)
		if st != 400 || !strings.Contains(out, "channels.z.api_key") {
			t.Fatalf("PUT: %d %s", st, out)
		}
	})
}

func TestConfigConflict(t *testing.T) {
	t.Run("POOL-22/changed-on-disk-is-409", func(t *testing.T) {
		w := newWorld(t, commented, 0o600)
		g := w.get()
		changed := commented + "# edited by hand\n"
		if err := os.WriteFile(w.path, []byte(changed), 0o600); err != nil {
			t.Fatal(err)
		}
		st, out := w.put(g.Version, g.Doc)
		if st != 409 || !strings.Contains(out, editor.Version([]byte(changed))) {
			t.Fatalf("PUT over a changed file: %d %s", st, out)
		}
		if w.file() != changed {
			t.Fatal("the conflicting save overwrote the file")
		}
		if st, _, _ := w.do("PUT", "/pool/config", "{}", nil); st != 428 {
			t.Fatalf("PUT without If-Match: %d", st)
		}
	})

	t.Run("POOL-22/two-concurrent-saves-one-wins", func(t *testing.T) {
		w := newWorld(t, commented, 0o600)
		g := w.get()
		var wg sync.WaitGroup
		sts := make([]int, 2)
		for i := range sts {
			wg.Go(func() {
				doc := strings.Replace(g.YAML, "First pool", []string{"Edit A", "Edit B"}[i], 1)
				sts[i], _ = w.put(g.Version, doc)
			})
		}
		wg.Wait()
		if !(sts[0] == 200 && sts[1] == 409 || sts[0] == 409 && sts[1] == 200) {
			t.Fatalf("statuses %v, want one 200 and one 409", sts)
		}
	})
}

func TestConfigGuard(t *testing.T) {
	w := newWorld(t, commented, 0o600)
	routes := [][2]string{{"GET", "/pool/config"}, {"PUT", "/pool/config"}, {"POST", "/pool/config/validate"}, {"POST", "/pool/config/models?members=a"}}
	t.Run("POOL-20/token-required", func(t *testing.T) {
		w.t = t // failures belong to the subtest
		for _, r := range routes {
			if st, _, _ := w.do(r[0], r[1], "{}", map[string]string{"Authorization": "", "If-Match": "x"}); st != 401 {
				t.Errorf("%s %s without token: %d", r[0], r[1], st)
			}
			if st, _, _ := w.do(r[0], r[1], "{}", map[string]string{"Authorization": "Bearer wrong", "If-Match": "x"}); st != 401 {
				t.Errorf("%s %s with a wrong token: %d", r[0], r[1], st)
			}
		}
	})
	t.Run("POOL-20/foreign-origin-refused", func(t *testing.T) {
		w.t = t // failures belong to the subtest
		for _, r := range routes {
			if st, _, _ := w.do(r[0], r[1], "{}", map[string]string{"Origin": "https://evil.example", "If-Match": "x"}); st != 403 {
				t.Errorf("%s %s from another origin: %d", r[0], r[1], st)
			}
			if st, _, _ := w.do(r[0], r[1], "{}", map[string]string{"Sec-Fetch-Site": "cross-site", "If-Match": "x"}); st != 403 {
				t.Errorf("%s %s cross-site: %d", r[0], r[1], st)
			}
		}
		if w.file() != commented {
			t.Fatal("a refused request changed the file")
		}
	})
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestConfigWithoutToken(t *testing.T) {
	t.Run("POOL-15/no-token-no-save-no-gather", func(t *testing.T) {
		path := t.TempDir() + "/config.yaml"
		if err := os.WriteFile(path, []byte(commented), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.LoadConfig(path, getenv)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(pool.New(cfg, pool.Options{ConfigFile: path, Getenv: getenv}))
		defer srv.Close()
		defer http.DefaultTransport.(*http.Transport).CloseIdleConnections()
		for _, c := range []struct {
			method, path string
			want         int
		}{{"GET", "/pool/config", 200}, {"POST", "/pool/config/validate", 200}, {"PUT", "/pool/config", 403}, {"POST", "/pool/config/models?members=a", 403}} {
			req, _ := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader("{}"))
			req.Header.Set("If-Match", editor.Version([]byte(commented)))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.want || strings.Contains(string(body), secretKey) {
				t.Errorf("%s %s without a pool token: %d, want %d (%s)", c.method, c.path, resp.StatusCode, c.want, body)
			}
		}
		if b, _ := os.ReadFile(path); string(b) != commented {
			t.Fatal("file changed")
		}
	})
}
