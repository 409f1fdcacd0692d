package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// badFile has one error of each kind on known lines: unknown keys, bad
// values, a missing key variable, a bad cross reference, a duplicate key.
const badFile = `channels:
  a: {api: anthropic, base_url: http://127.0.0.1:1, api_key: k1, colour: red}
  b:
    api: nonsense
    base_url: http://127.0.0.1:2
    api_key_env: NOPE_B
    modles: []
pools:
  p:
    members: [a, b, zz]
    strategy: fast
    models: [{id: m, efforts: [low, huge, vast]}]
    session_ttl_ms: -5
  p:
    members: [a]
`

func TestEveryErrorWithPosition(t *testing.T) {
	want := []string{
		"2:66: channels.a.colour: unknown key",
		"4:5: channels.b.api: unknown api \"nonsense\"",
		"6:5: channels.b.api_key_env: environment variable NOPE_B is empty or unset",
		"7:5: channels.b.modles: unknown key (did you mean models?)",
		"10:21: pools.p.members[2]: unknown channel \"zz\"",
		"11:5: pools.p.strategy: unknown strategy \"fast\"",
		"12:37: pools.p.models[0].efforts[1]: unknown effort \"huge\"",
		"12:43: pools.p.models[0].efforts[2]: unknown effort \"vast\"",
		"13:5: pools.p.session_ttl_ms: expected milliseconds",
		"14:3: pools.p: duplicate key (first at line 9)",
	}
	t.Run("POOL-3/every-error-in-file-order-with-line-and-column", func(t *testing.T) {
		_, err := ParseConfig([]byte(badFile), nil)
		es := AllErrors(err)
		if len(es) != len(want) {
			t.Fatalf("%d errors, want %d:\n%s", len(es), len(want), strings.Join(ConfigErrors(es).Lines(), "\n"))
		}
		for i, e := range es {
			if got := fmt.Sprintf("%d:%d: %s: %s", e.Line, e.Column, e.Path, e.Msg); !strings.HasPrefix(got, want[i]) {
				t.Errorf("error %d = %q, want %q…", i, got, want[i])
			}
		}
		if strings.Contains(err.Error(), "k1") {
			t.Fatalf("key in error: %v", err)
		}
	})
	t.Run("POOL-3/load-config-names-the-file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "c.yaml")
		if err := os.WriteFile(path, []byte(badFile), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := LoadConfig(path, nil)
		lines := ConfigErrors(AllErrors(err)).Lines()
		if len(lines) != len(want) {
			t.Fatalf("%d errors: %v", len(lines), err)
		}
		for i, l := range lines {
			if !strings.HasPrefix(l, path+":"+want[i]) {
				t.Errorf("line %d = %q, want %s:%s…", i, l, path, want[i])
			}
		}
	})
	t.Run("POOL-3/one-error-is-a-config-error-with-its-position", func(t *testing.T) {
		_, err := ParseConfig([]byte("channels:\n  a: {api: anthropic, base_url: http://x, api_key: k}\n  a: {api: openai}\n"), nil)
		e, ok := err.(*ConfigError)
		if !ok || e.Path != "channels.a" || e.Line != 3 || e.Column != 3 || err.Error() != "channels.a: duplicate key (first at line 2) (line 3, column 3)" {
			t.Fatalf("%T %v", err, err)
		}
	})
	t.Run("POOL-3/syntax-error-has-its-line", func(t *testing.T) {
		_, err := ParseConfig([]byte("channels:\n  a: [\n"), nil)
		e, ok := err.(*ConfigError)
		if !ok || e.Line != 2 || e.Path != "" {
			t.Fatalf("%T %+v", err, err)
		}
	})
	t.Run("POOL-3/missing-key-points-at-its-entry", func(t *testing.T) {
		// A required key the file lacks has no node of its own: the error
		// names the entry to add it to, not no line at all.
		_, err := ParseConfig([]byte("channels:\n  x: {api: anthropic, api_key_env: K}\n  a:\n    api_key: k\n"), func(string) string { return "v" })
		for _, e := range AllErrors(err) {
			e.File = "F"
		}
		want := []string{
			"F:2:3: channels.x.base_url: missing",
			"F:3:3: channels.a.api: missing (" + strings.Join(ChannelAPIs, ", ") + ")",
			"F:3:3: channels.a.base_url: missing",
		}
		if got := ConfigErrors(AllErrors(err)).Lines(); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
	t.Run("POOL-3/one-item-without-brackets-says-how-to-write-it", func(t *testing.T) {
		for in, want := range map[string]string{
			"members: a":                             "expected a list: write [a] for one item",
			"members: sk-ant-api03-0123456789abcdef": "expected a list",
			"members: {a: b}":                        "expected a list",
		} {
			_, err := ParseConfig([]byte("channels:\n  a: {api: anthropic, base_url: http://x, api_key: k}\npools:\n  p: {"+in+"}\n"), nil)
			if es := AllErrors(err); len(es) == 0 || es[0].Path != "pools.p.members" || es[0].Msg != want || strings.Contains(err.Error(), "0123456789") {
				t.Errorf("%s: %v", in, err)
			}
		}
	})
	t.Run("POOL-3/cross-reference-not-repeated-under-a-bad-value", func(t *testing.T) {
		_, err := ParseConfig([]byte("channels:\n  a: {api: anthropic, base_url: http://x, api_key: k}\npools:\n  p: {members: a}\n"), nil)
		if es := AllErrors(err); len(es) != 1 || es[0].Path != "pools.p.members" || es[0].Msg != "expected a list: write [a] for one item" {
			t.Fatalf("%v", err)
		}
	})
}

func TestLocate(t *testing.T) {
	doc := "channels:\n  v1.2: {models: [{id: m}, {id: n, input: [text]}]}\npools:\n  p: {members: [a]}\n"
	var errs errList
	for _, p := range []string{"channels.v1.2.models[1].input[0]", "pools.p.members[0]", "pools.p", "nosuch", "pools.p.members[9]"} {
		errs = append(errs, cfgErr(p, "x"))
	}
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &root); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range errs.located(root.Content[0]) {
		got[e.Path] = fmt.Sprintf("%d:%d", e.Line, e.Column)
	}
	t.Run("POOL-3/paths-with-dots-and-items", func(t *testing.T) {
		for p, w := range map[string]string{"channels.v1.2.models[1].input[0]": "2:44", "pools.p.members[0]": "4:17", "pools.p": "4:3", "nosuch": "0:0", "pools.p.members[9]": "4:7"} {
			if got[p] != w {
				t.Errorf("%s at %s, want %s", p, got[p], w)
			}
		}
	})
}

// TestYAMLSyntaxErrorLines: yaml.v3 names, for every parser error, the line
// before the start of the enclosing collection (0-based context mark); the
// wrapped error names the line to edit, per kind, and never a column.
func TestYAMLSyntaxErrorLines(t *testing.T) {
	cases := []struct {
		name, yaml string
		line       int
		msg        string
	}{
		// parser errors: yaml.v3 says one line early, or further
		{"key-indented-deeper", "channels:\n  a: {api: anthropic}\n   b: {api: openai}\npools:\n  p: {members: [a]}\n", 3, "did not find expected key (a line indented"},
		{"key-indented-less", "channels:\n    a:\n      api: anthropic\n   b: x\npools: {}\n", 4, "did not find expected key"},
		{"key-under-a-flow-value", "pools:\n  p:\n    members: [a]\n      strategy: sticky\n", 4, "did not find expected key"},
		{"root-key-indented", "channels: {}\n pools: {}\n", 2, "did not find expected key"},
		{"comment-lines-before", "# c\n\nchannels:\n  a: x\n b: y\n", 5, "did not find expected key"},
		{"item-without-dash", "pools:\n  p:\n    members:\n      - a\n      b: c\n", 5, "did not find expected '-' indicator (a list item without '- '"},
		{"flow-mapping-unclosed", "channels:\n  a: {api: anthropic, base_url: http://x\n  b: {api: openai}\n", 2, "did not find expected ',' or '}' (a { … } not closed, or a ',' missing"},
		{"flow-mapping-unclosed-line-1", "{api: anthropic, base_url: http://x\n", 1, "did not find expected ',' or '}'"},
		{"flow-mapping-comma-missing-over-lines", "channels:\n  u: {api: anthropic, base_url: http://x,\n      models: [{id: a}]\n      api_key_env: K}\n", 3, "did not find expected ',' or '}'"},
		{"flow-sequence-unclosed", "pools:\n  p: {members: [a, b}\n  q: {members: [a]}\n", 2, "did not find expected ',' or ']' (a [ … ] not closed"},
		{"flow-sequence-unclosed-block", "pools:\n  p:\n    members: [a, b\n  q:\n    members: [a]\n", 3, "did not find expected ',' or ']'"},
		{"node-content-missing", "pools:\n  p: {members: [a, b], x: ]}\n", 2, "did not find expected node content"},
		{"undefined-tag", "x: 1\na: !e!x b\n", 2, "found undefined tag handle"},
		// scanner errors: yaml.v3's line is right and stays
		{"tab-indent", "channels:\n  a:\n\t  b: x\n", 3, "found character that cannot start any token (a tab in the indentation"},
		{"unclosed-quote", "channels:\n  a: {api: \"anthropic}\n  b: {api: openai}\n", 2, "found unexpected end of stream"},
		{"unknown-escape", "x: 1\na: \"\\q\"\n", 2, "found unknown escape character"},
		// no line from yaml.v3 at all: the line is found
		{"mapping-value-on-line-1", "a: b: c\n", 1, "mapping values are not allowed in this context"},
		{"unknown-anchor", "channels:\n  a: {api: anthropic}\n  b: *nope\n", 3, "unknown anchor 'nope' referenced"},
	}
	for _, c := range cases {
		t.Run("POOL-3/"+c.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(c.yaml), nil)
			es := AllErrors(err)
			if len(es) != 1 {
				t.Fatalf("want one error, got %v", err)
			}
			e := es[0]
			if e.Line != c.line || e.Column != 0 || !strings.HasPrefix(e.Msg, c.msg) || strings.Contains(e.Msg, "line 1") || strings.Contains(e.Msg, "line 2") {
				t.Errorf("line %d column %d msg %q, want line %d and %q…", e.Line, e.Column, e.Msg, c.line, c.msg)
			}
		})
	}
	t.Run("POOL-3/file-line-shape", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "c.yaml")
		if err := os.WriteFile(path, []byte(cases[0].yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := LoadConfig(path, nil)
		if err == nil || !strings.HasPrefix(err.Error(), path+":3: did not find expected key") {
			t.Fatalf("got %v", err)
		}
	})
}
