package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestIDAlphabet: pool ids, channel ids and unified model ids are 1 to 64
// of A-Z a-z 0-9 '.' '_' '-', a channel's model ids that alphabet plus ':'
// and '/'; others are refused at load with the file position (SPEC POOL-3).
func TestIDAlphabet(t *testing.T) {
	t.Run("POOL-3/id-alphabet", func(t *testing.T) {
		for id, ok := range map[string]bool{
			"a": true, "claude-pool": true, "A.b_c-9": true, strings.Repeat("x", 64): true,
			"": false, ".": false, "..": false, "...": true, strings.Repeat("x", 65): false, "a/b": false, "a b": false, `x"y`: false, "a\x1bb": false,
			"é": false, "a:b": false, "50%off": false, "a?b#c": false, "tab\tx": false, "a\nb": false,
		} {
			if ValidID(id) != ok {
				t.Errorf("ValidID(%q) = %v", id, !ok)
			}
		}
	})
	t.Run("POOL-3/bad-ids-refused-with-file-line-and-column", func(t *testing.T) {
		file := "channels:\n" +
			"  ok: {api: anthropic, base_url: \"http://127.0.0.1:1\", api_key: k1}\n" +
			"  \"a/b\": {api: anthropic, base_url: \"http://127.0.0.1:1\", api_key: k2,\n" +
			"          models: [{id: \"qwen2.5:7b\"}, {id: \"deepseek-ai/DeepSeek-V3\"}, {id: \"bad model\"}]}\n" +
			"pools:\n" +
			"  \"x\\\"y\":\n" +
			"    members: [ok]\n" +
			"  \"esc\\e[2J\":\n" +
			"    members: [ok]\n" +
			"  p:\n" +
			"    members: [ok]\n" +
			"    models: [{id: flash}, {id: \"a/b\"}, {id: \"x\\\"y\"}]\n"
		path := filepath.Join(t.TempDir(), "c.yaml")
		if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := LoadConfig(path, nil)
		want := []string{
			path + ":3:3: channels.a/b: not a valid id",
			path + ":4:74: channels.a/b.models[2].id: not a valid model id",
			path + ":6:3: pools.x\"y: not a valid id",
			path + `:8:3: "pools.esc\x1b[2J": not a valid id`,
			path + ":12:28: pools.p.models[1].id: not a valid id",
			path + ":12:41: pools.p.models[2].id: not a valid id",
		}
		lines := ConfigErrors(AllErrors(err)).Lines()
		if len(lines) != len(want) {
			t.Fatalf("%d errors, want %d:\n%s", len(lines), len(want), strings.Join(lines, "\n"))
		}
		for i, l := range lines {
			if !strings.HasPrefix(l, want[i]) {
				t.Errorf("error %d = %q, want %q…", i, l, want[i])
			}
		}
	})
}
