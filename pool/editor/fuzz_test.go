package editor

import (
	"strings"
	"testing"
)

// FuzzMerge: laying any document over any file never panics, a merged
// result re-encodes and parses, and its redacted form holds no api_key but
// the placeholder (SPEC POOL-15, POOL-22).
func FuzzMerge(f *testing.F) {
	f.Add("channels:\n  a: {api: anthropic, base_url: http://u:pw@h, api_key: sk-1}\n# c\npools:\n  p: {members: [a]}\n",
		`{"channels": {"a": {"api": "anthropic", "base_url": "http://u:***@h", "api_key": "***"}}, "pools": {"p": {"members": ["a", "b"]}}}`)
	f.Add("a: [1, {id: x}]\n", "a: [{id: x, k: 2}, 3]\n")
	f.Add("channels: {a: {api_key: k}}\n", "channels: {a: {api_key: ***}, b: {api_key: ***}}\n")
	f.Add(spliceFile, "channels:\n  kimi: {api: openai-chat, base_url: 'https://x/v1', auth: bearer}\npools:\n  claude-pool:\n    strategy: failover\n    members: [ustc, kimi]\n    models:\n      - id: flash\n        targets: {ustc: x}\n      - id: pro\n")
	f.Add("pools:\n  p:\n    models:\n      # c\n      - id: m   # l\n        context_window: 1\n      - id: n\n",
		`{"pools": {"p": {"models": [{"id": "q", "max_tokens": 2}, {"id": "n"}]}}}`) // an item replaced (samePlace)
	f.Fuzz(func(t *testing.T, disk, edit string) {
		d, err := parseDoc([]byte(disk))
		if err != nil {
			return
		}
		e, err := parseDoc([]byte(edit))
		if err != nil {
			return
		}
		m, err := merge(d, e)
		if err != nil {
			return
		}
		text, err := encodeDoc(m, fileIndent([]byte(disk)))
		if err != nil {
			return // yaml.v3 refuses some node shapes it parsed (e.g. odd tags)
		}
		if _, err := parseDoc(text); err != nil {
			t.Fatalf("merged text does not parse: %v\n%s", err, text)
		}
		// The save's splice (splice.go) never panics, and what it returns
		// reads as the merged tree.
		if out, ok := spliceDoc([]byte(disk), d, m, fileIndent([]byte(disk)), false); ok {
			back, err := parseDoc(out)
			if err != nil || !sameTree(back.Content[0], m.Content[0]) {
				t.Fatalf("spliced text does not read as the merge (%v):\n%s", err, out)
			}
		}
		for _, ch := range channelNodes(redact(m)) {
			if k := mapValue(ch, "api_key"); k != nil && k.Value != "" && k.Value != Placeholder && !strings.Contains(edit, k.Value) {
				t.Fatalf("redacted api_key %q", k.Value)
			}
		}
	})
}
