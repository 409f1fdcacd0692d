package editor_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/editor"
)

// aligned is a configuration written by hand: plain URLs in aligned flow
// mappings, which yaml.v3's rendering would quote and un-align.
const aligned = `channels:
  a:   {api: anthropic,   base_url: http://127.0.0.1:1,  api_key_env: ENV_KEY}
  bb:  {api: openai-chat, base_url: http://127.0.0.1:2,  api_key_env: ENV_KEY}
pools:
  p: {members: [a]}
`

// TestPutYAMLVerbatim: a YAML document sent to PUT /pool/config is saved
// as sent when nothing in it had to be restored from the file (SPEC
// POOL-22: the file keeps the user's quoting, alignment and comments).
func TestPutYAMLVerbatim(t *testing.T) {
	t.Run("POOL-22/yaml-put-with-a-new-comment-is-saved-as-sent", func(t *testing.T) {
		// The file must not come back with base_url quoted and the
		// alignment gone.
		w := newWorld(t, aligned, 0o600)
		g := w.get()
		body := "# edited by hand\n" + strings.Replace(aligned, "  p: {members: [a]}", "  p: {members: [a, bb]}   # both", 1)
		if st, out := w.put(g.Version, body); st != 200 {
			t.Fatalf("PUT: %d %s", st, out)
		}
		if got := w.file(); got != body {
			t.Fatalf("saved file differs from the YAML sent:\n%s\nwant:\n%s", got, body)
		}
	})
	t.Run("POOL-15/yaml-put-with-the-key-placeholder-keeps-the-stored-key", func(t *testing.T) {
		// GET's yaml shows a literal key as the placeholder; sending that
		// text back must keep the key, so it is not saved verbatim.
		w := newWorld(t, commented, 0o600)
		g := w.get()
		if !strings.Contains(g.YAML, editor.Placeholder) {
			t.Fatalf("GET yaml shows no placeholder:\n%s", g.YAML)
		}
		if st, out := w.put(g.Version, "# note\n"+g.YAML); st != 200 {
			t.Fatalf("PUT: %d %s", st, out)
		}
		got := w.file()
		if !strings.Contains(got, secretKey) || strings.Contains(got, editor.Placeholder) {
			t.Fatalf("the stored key was not kept:\n%s", got)
		}
	})
}

// TestPutReplacedItemComments: one PUT over HTTP (the page's JSON) that
// deletes a unified model and adds another at its place saves the new one
// without the deleted one's comments (SPEC POOL-22; closing note's open
// item: the comments followed the place).
func TestPutReplacedItemComments(t *testing.T) {
	t.Run("POOL-22/put-replacing-an-item-drops-its-comments", func(t *testing.T) {
		const file = "channels:\n  a: {api: anthropic, base_url: http://127.0.0.1:1, api_key_env: ENV_KEY}\npools:\n  p:\n    members: [a]\n" +
			"    models:\n      # retired next month: do not route new work here\n      - id: old   # legacy\n        context_window: 1000\n      - id: kept   # stays\n"
		w := newWorld(t, file, 0o600)
		g := w.get()
		p := g.Doc["pools"].(map[string]any)["p"].(map[string]any)
		p["models"].([]any)[0] = map[string]any{"id": "fresh", "max_tokens": 4096}
		if st, out := w.put(g.Version, g.Doc); st != 200 {
			t.Fatalf("PUT: %d %s", st, out)
		}
		got := w.file()
		// Only the replaced item's lines change; its neighbour keeps its own.
		want := strings.Replace(file, "      # retired next month: do not route new work here\n      - id: old   # legacy\n        context_window: 1000\n",
			"      - id: fresh\n        max_tokens: 4096\n", 1)
		if got != want {
			t.Fatalf("saved:\n%s\nwant:\n%s", got, want)
		}
	})
}

// TestPutYAMLKeepsFileComments: a YAML body without comments of its own is
// merged, not saved as sent, when the file has comments: the file keeps
// them (SPEC POOL-22, "a body without comments keeps the file's"); and the
// validate preview is the text a PUT saves, whose lines the errors' positions
// count (the bug class: a PUT that drops the file's comment while the
// preview shows it kept).
func TestPutYAMLKeepsFileComments(t *testing.T) {
	const file = "# my config\nchannels:\n  a: {api: anthropic, base_url: http://127.0.0.1:1, api_key_env: ENV_KEY}  # the mock\npools:\n  p:\n    strategy: failover\n    members: [a]\n"
	body := strings.NewReplacer("# my config\n", "", "  # the mock", "", "strategy: failover", "strategy:   failover").Replace(file)
	t.Run("POOL-22/yaml-put-without-comments-keeps-the-files", func(t *testing.T) {
		w := newWorld(t, file, 0o600)
		g := w.get()
		if st, out := w.put(g.Version, body); st != 200 {
			t.Fatalf("PUT: %d %s", st, out)
		}
		got := w.file()
		mustSub(t, got, "# my config\n")
		mustSub(t, got, "# the mock")
	})
	t.Run("POOL-22/validate-previews-what-put-saves", func(t *testing.T) {
		for _, doc := range []string{body, "# by hand\n" + body} {
			w := newWorld(t, file, 0o600)
			g := w.get()
			st, _, out := w.do("POST", "/pool/config/validate", doc, nil)
			if st != 200 {
				t.Fatalf("validate: %d %s", st, out)
			}
			var v struct {
				OK   bool   `json:"ok"`
				YAML string `json:"yaml"`
			}
			if err := json.Unmarshal([]byte(out), &v); err != nil || !v.OK {
				t.Fatalf("validate: %v %s", err, out)
			}
			if st, out := w.put(g.Version, doc); st != 200 {
				t.Fatalf("PUT: %d %s", st, out)
			}
			if saved := w.file(); saved != v.YAML {
				t.Fatalf("validate previewed:\n%s\nPUT saved:\n%s", v.YAML, saved)
			}
		}
	})
	t.Run("POOL-22/yaml-put-over-a-file-without-comments-is-saved-as-sent", func(t *testing.T) {
		plain := strings.NewReplacer("# my config\n", "", "  # the mock", "").Replace(file)
		w := newWorld(t, plain, 0o600)
		g := w.get()
		if st, out := w.put(g.Version, body); st != 200 {
			t.Fatalf("PUT: %d %s", st, out)
		}
		if got := w.file(); got != body {
			t.Fatalf("saved:\n%s\nwant as sent:\n%s", got, body)
		}
	})
}
