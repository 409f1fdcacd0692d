package editor

import (
	"encoding/json"
	"strings"
	"testing"
)

// spliceFile is a configuration written by hand: aligned flow mappings,
// plain and quoted URLs, a flow mapping over three lines, line comments
// aligned in a column, a blank line between pools.
const spliceFile = `# my pools
channels:
  deepseek:  {api: anthropic, base_url: https://api.deepseek.com/anthropic, api_key_env: DEEPSEEK_KEY}
  ustc:      {api: anthropic, base_url: https://llm.example.edu/anthropic, api_key_env: USTC_KEY,
              models: [{id: deepseek-v4.1-flash, context_window: 131072, max_tokens: 32768,
                        input: [text], efforts: [low, medium, high]}]}
  openai-a:  {api: openai, base_url: "https://api.openai.com/v1", api_key: sk-abc}
  kimi:      {api: openai-chat, base_url: 'https://api.moonshot.cn/v1', api_key_env: KIMI_KEY}
pools:
  claude-pool:                  # for Claude Code (Anthropic Messages API)
    strategy: sticky            # sticky | round-robin | failover
    members: [deepseek, ustc]
    models:
      - id: flash
        targets: {deepseek: deepseek-chat, ustc: deepseek-v4.1-flash}
        effort_map: {ustc: {max: high}}
    cooldown: {auth_ms: 600000, server_ms: 30000}

  codex-pool:
    members: [openai-a, kimi]
`

// saveEdit lays the page's document (GET's doc, changed by change) over
// file and returns the text a save writes.
func saveEdit(t *testing.T, file string, change func(doc map[string]any)) string {
	t.Helper()
	disk, err := parseDoc([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := redact(disk).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	change(doc)
	b, err := json.Marshal(jsonable(doc))
	if err != nil {
		t.Fatal(err)
	}
	edit, err := parseDoc(b)
	if err != nil {
		t.Fatal(err)
	}
	merged, err := merge(disk, edit)
	if err != nil {
		t.Fatal(err)
	}
	l := &loaded{data: []byte(file), doc: disk}
	out, err := l.text(merged)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func at(d map[string]any, path ...string) map[string]any {
	for _, p := range path {
		d = d[p].(map[string]any)
	}
	return d
}

func TestSaveKeepsUntouchedLines(t *testing.T) {
	cases := []struct {
		name     string
		change   func(map[string]any)
		from, to string // the only change expected in the file (from "" = none)
	}{
		{"nothing-changed", func(map[string]any) {}, "", ""},
		{"flow-mapping-field", func(d map[string]any) { at(d, "channels", "kimi")["api_key_env"] = "KIMI2" },
			"api_key_env: KIMI_KEY}", "api_key_env: KIMI2}"},
		{"flow-mapping-url-stays-plain", func(d map[string]any) { at(d, "channels", "deepseek")["base_url"] = "https://x.example/v2" },
			"base_url: https://api.deepseek.com/anthropic,", "base_url: https://x.example/v2,"},
		{"quoted-url-keeps-its-quotes", func(d map[string]any) { at(d, "channels", "kimi")["base_url"] = "https://y.example/v1" },
			"base_url: 'https://api.moonshot.cn/v1'", "base_url: 'https://y.example/v1'"},
		{"field-added-to-a-flow-mapping-over-lines", func(d map[string]any) { at(d, "channels", "ustc")["auth"] = "bearer" },
			"efforts: [low, medium, high]}]}\n", "efforts: [low, medium, high]}], auth: bearer}\n"},
		{"block-scalar-keeps-its-comment-column", func(d map[string]any) { at(d, "pools", "claude-pool")["strategy"] = "failover" },
			"strategy: sticky            #", "strategy: failover            #"},
		{"members-reordered-and-added", func(d map[string]any) { at(d, "pools", "claude-pool")["members"] = []any{"ustc", "deepseek", "kimi"} },
			"members: [deepseek, ustc]", "members: [ustc, deepseek, kimi]"},
		{"nested-flow-value", func(d map[string]any) { at(d, "pools", "claude-pool", "cooldown")["auth_ms"] = 1000 },
			"{auth_ms: 600000,", "{auth_ms: 1000,"},
		{"target-in-a-list-item", func(d map[string]any) {
			at(d, "pools", "claude-pool")["models"].([]any)[0].(map[string]any)["targets"].(map[string]any)["ustc"] = "other"
		}, "ustc: deepseek-v4.1-flash}", "ustc: other}"},
		{"pool-deleted", func(d map[string]any) { delete(at(d, "pools"), "codex-pool") },
			"  codex-pool:\n    members: [openai-a, kimi]\n", ""},
		{"channel-deleted", func(d map[string]any) { delete(at(d, "channels"), "openai-a") },
			"  openai-a:  {api: openai, base_url: \"https://api.openai.com/v1\", api_key: sk-abc}\n", ""},
		{"pool-added-at-the-end", func(d map[string]any) { at(d, "pools")["new"] = map[string]any{"members": []any{"kimi"}} },
			"    members: [openai-a, kimi]\n", "    members: [openai-a, kimi]\n  new:\n    members: [kimi]\n"},
		{"pool-replaced-by-another", func(d map[string]any) {
			delete(at(d, "pools"), "codex-pool")
			at(d, "pools")["new"] = map[string]any{"members": []any{"kimi"}}
		}, "\n  codex-pool:\n    members: [openai-a, kimi]\n", "  new:\n    members: [kimi]\n\n"},
		{"channel-replaced-by-another-right-after", func(d map[string]any) {
			delete(at(d, "channels"), "kimi")
			at(d, "channels")["z"] = map[string]any{"api": "openai", "base_url": "http://127.0.0.1:9/v1", "api_key_env": "Z"}
		}, "  kimi:      {api: openai-chat, base_url: 'https://api.moonshot.cn/v1', api_key_env: KIMI_KEY}\n",
			"  z:\n    api: openai\n    api_key_env: Z\n    base_url: http://127.0.0.1:9/v1\n"},
		{"model-added-to-the-list", func(d map[string]any) {
			p := at(d, "pools", "claude-pool")
			p["models"] = append(p["models"].([]any), map[string]any{"id": "pro"})
		}, "        effort_map: {ustc: {max: high}}\n", "        effort_map: {ustc: {max: high}}\n      - id: pro\n"},
	}
	for _, c := range cases {
		t.Run("POOL-22/"+c.name, func(t *testing.T) {
			want := spliceFile
			if c.from != "" {
				if strings.Count(spliceFile, c.from) != 1 {
					t.Fatalf("test: %q is not once in the file", c.from)
				}
				want = strings.Replace(spliceFile, c.from, c.to, 1)
			}
			if got := saveEdit(t, spliceFile, c.change); got != want {
				t.Errorf("saved\n%s\nwant\n%s", got, want)
			}
		})
	}
	t.Run("POOL-22/key-renamed-in-place", func(t *testing.T) {
		disk, _ := parseDoc([]byte(spliceFile))
		renamed := deepCopy(disk)
		if _, err := rename(renamed, renameRequest{Kind: "channel", From: "ustc", To: "ustc-b"}); err != nil {
			t.Fatal(err)
		}
		l := &loaded{data: []byte(spliceFile), doc: disk}
		out, _ := l.textOf(renamed, true)
		want := strings.NewReplacer("  ustc:      {", "  ustc-b:      {", "[deepseek, ustc]", "[deepseek, ustc-b]",
			"ustc: deepseek-v4.1-flash}", "ustc-b: deepseek-v4.1-flash}", "{ustc: {max", "{ustc-b: {max").Replace(spliceFile)
		if string(out) != want {
			t.Errorf("renamed\n%s\nwant\n%s", out, want)
		}
	})
	t.Run("POOL-15/get-shows-the-file-with-keys-masked", func(t *testing.T) {
		disk, _ := parseDoc([]byte(spliceFile))
		l := &loaded{data: []byte(spliceFile), doc: disk}
		out, _ := l.text(redact(disk))
		if want := strings.Replace(spliceFile, "api_key: sk-abc}", "api_key: '***'}", 1); string(out) != want {
			t.Errorf("GET's yaml\n%s\nwant\n%s", out, want)
		}
	})
}

// TestSaveFallsBack: a file the splice does not handle (CRLF line ends) is
// rendered whole by yaml.v3, as before, and still reads as the edit.
func TestSaveFallsBack(t *testing.T) {
	t.Run("POOL-22/crlf-file-rendered-whole", func(t *testing.T) {
		file := strings.ReplaceAll("channels:\n  a: {api: openai, base_url: http://127.0.0.1:1, api_key_env: K}\npools:\n  p: {members: [a]}\n", "\n", "\r\n")
		out := saveEdit(t, file, func(d map[string]any) { at(d, "pools", "p")["strategy"] = "failover" })
		if !strings.Contains(out, "strategy: failover") || !strings.Contains(out, "members: [a]") {
			t.Fatalf("saved:\n%s", out)
		}
	})
}

// TestIDEditKeepsComments: an item whose id the page's PUT changed (a
// unified model's id, a member replaced in place) is that item edited, not
// one deleted and one added: its comments, key order and style stay, and
// only the changed token differs (SPEC POOL-22).
func TestIDEditKeepsComments(t *testing.T) {
	const file = `pools:
  p:
    members:
      - a   # first member
      - b
    models:
      # the main model
      - id: m   # model line
        context_window: 1000  # window
        targets: {b: m-b}
      # second
      - id: n
`
	for _, tc := range []struct {
		name     string
		change   func(map[string]any)
		from, to string
	}{
		{"POOL-22/model-id-changed-keeps-its-comments", func(d map[string]any) {
			at(d, "pools", "p")["models"].([]any)[0].(map[string]any)["id"] = "m2"
		}, "- id: m   # model line", "- id: m2   # model line"},
		{"POOL-22/second-model-id-changed", func(d map[string]any) {
			at(d, "pools", "p")["models"].([]any)[1].(map[string]any)["id"] = "n2"
		}, "      # second\n      - id: n\n", "      # second\n      - id: n2\n"},
		{"POOL-22/member-replaced-in-place-keeps-its-comment", func(d map[string]any) {
			at(d, "pools", "p")["members"].([]any)[0] = "c"
		}, "- a   # first member", "- c   # first member"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, want := saveEdit(t, file, tc.change), strings.Replace(file, tc.from, tc.to, 1); got != want {
				t.Errorf("saved\n%s\nwant\n%s", got, want)
			}
		})
	}
	t.Run("POOL-22/reordered-models-still-match-by-id", func(t *testing.T) {
		got := saveEdit(t, file, func(d map[string]any) {
			ms := at(d, "pools", "p")["models"].([]any)
			ms[0], ms[1] = ms[1], ms[0]
		})
		if !strings.Contains(got, "# model line") || !strings.Contains(got, "# window") || strings.Index(got, "id: n") > strings.Index(got, "id: m") {
			t.Errorf("saved\n%s", got)
		}
	})
}

// TestDeletedItemCommentsStayDeleted: one PUT that deletes a sequence item
// with an id and adds a different item at its place gets the new item
// without the deleted one's comments (they followed the place: the new
// model read "# the main model", SPEC POOL-22); an id edited in place with
// the item's other fields kept is still that item (TestIDEditKeepsComments).
func TestDeletedItemCommentsStayDeleted(t *testing.T) {
	const file = `pools:
  p:
    members: [a, b]
    models:
      # the main model: keep its window
      - id: m   # model line
        context_window: 1000  # window
        targets: {b: m-b}
      # second
      - id: n
        max_tokens: 64
`
	t.Run("POOL-22/new-item-at-a-deleted-items-place-gets-no-comments", func(t *testing.T) {
		got := saveEdit(t, file, func(d map[string]any) {
			at(d, "pools", "p")["models"].([]any)[0] = map[string]any{"id": "q", "efforts": []any{"low"}}
		})
		for _, gone := range []string{"main model", "model line", "# window", "m-b"} {
			if strings.Contains(got, gone) {
				t.Errorf("%q of the deleted item is still in\n%s", gone, got)
			}
		}
		if !strings.Contains(got, "id: q") || !strings.Contains(got, "      # second\n      - id: n\n        max_tokens: 64\n") {
			t.Errorf("saved\n%s", got)
		}
	})
	t.Run("POOL-22/id-and-one-field-edited-is-still-the-item", func(t *testing.T) {
		got := saveEdit(t, file, func(d map[string]any) {
			m := at(d, "pools", "p")["models"].([]any)[0].(map[string]any)
			m["id"], m["context_window"] = "m2", 2000
		})
		if want := strings.Replace(strings.Replace(file, "- id: m   #", "- id: m2   #", 1), "context_window: 1000", "context_window: 2000", 1); got != want {
			t.Errorf("saved\n%s\nwant\n%s", got, want)
		}
	})
	t.Run("POOL-22/second-item-replaced-by-a-new-one", func(t *testing.T) {
		got := saveEdit(t, file, func(d map[string]any) {
			at(d, "pools", "p")["models"].([]any)[1] = map[string]any{"id": "r", "context_window": 5}
		})
		if strings.Contains(got, "# second") || strings.Contains(got, "max_tokens") || !strings.Contains(got, "# model line") || !strings.Contains(got, "id: r") {
			t.Errorf("saved\n%s", got)
		}
	})
}
