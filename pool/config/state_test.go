package config

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestStateConfig(t *testing.T) {
	base := "pools: {p: {members: [a]}}\nchannels: {a: {api: anthropic, base_url: https://a.example, api_key: sk-aaaa}}\n"
	t.Run("POOL-16/default-memory", func(t *testing.T) {
		cfg, err := ParseConfig([]byte(base), nil)
		if err != nil || cfg.State.Shared() {
			t.Fatalf("%v %+v", err, cfg.State)
		}
		if !strings.Contains(cfg.Redacted(), "url: memory") {
			t.Fatal(cfg.Redacted())
		}
	})
	t.Run("POOL-23/scalar-and-mapping", func(t *testing.T) {
		cfg, err := ParseConfig([]byte(base+"state: redis://u:hunter2pw@127.0.0.1:6379/2\n"), nil)
		if err != nil || !cfg.State.Shared() || cfg.State.URL != "redis://u:hunter2pw@127.0.0.1:6379/2" {
			t.Fatalf("%v %+v", err, cfg.State)
		}
		cfg, err = ParseConfig([]byte(base+"state: {url: 'rediss://:hunter2pw@r.example:6380', name: team-a, timeout_ms: 250}\n"), nil)
		if err != nil || cfg.State.Name != "team-a" || cfg.State.Timeout != 250*time.Millisecond {
			t.Fatalf("%v %+v", err, cfg.State)
		}
		if StatePrefix(cfg) != "dp:team-a:" {
			t.Fatal(StatePrefix(cfg))
		}
	})
	t.Run("POOL-23/credentials-redacted", func(t *testing.T) {
		cfg, err := ParseConfig([]byte(base+"state: redis://user:hunter2pw@127.0.0.1:6379/0\n"), nil)
		if err != nil {
			t.Fatal(err)
		}
		out := cfg.Redacted()
		if strings.Contains(out, "hunter2pw") || !strings.Contains(out, "redis://user:***@127.0.0.1:6379/0") {
			t.Fatal(out)
		}
		if got := RedactStateURL("redis://:hunter2pw@h:1"); got != "redis://:***@h:1" {
			t.Fatal(got)
		}
	})
	t.Run("POOL-23/bad-values-name-the-path-not-the-password", func(t *testing.T) {
		for _, v := range []string{"state: http://x:hunter2pw@h:1", "state: 'redis://:hunter2pw@'", "state: redis://h:1/x", "state: {url: memory, bogus: 1}", "state: {name: 'a b'}", "state: {timeout_ms: 0}"} {
			_, err := ParseConfig([]byte(base+v+"\n"), nil)
			if err == nil || !strings.HasPrefix(err.Error(), "state") || strings.Contains(err.Error(), "hunter2pw") {
				t.Errorf("%s: %v", v, err)
			}
		}
	})
	t.Run("POOL-23/state-name-charset-and-length", func(t *testing.T) {
		for name, ok := range map[string]bool{
			"team-a": true, "A.b_c-9": true, strings.Repeat("x", 64): true,
			"": false, strings.Repeat("x", 65): false, "a b": false, "a:b": false, "é": false, "a\nb": false, "a/b": false,
		} {
			_, err := ParseConfig([]byte(base+"state: {name: "+strconv.Quote(name)+"}\n"), nil)
			if got := err == nil; got != ok {
				t.Errorf("name %q: err %v, want ok=%v", name, err, ok)
			}
		}
	})
	t.Run("POOL-23/prefix-follows-pools", func(t *testing.T) {
		a, _ := ParseConfig([]byte(base), nil)
		b, _ := ParseConfig([]byte(strings.Replace(base, "p:", "q:", 1)), nil)
		if StatePrefix(a) == StatePrefix(b) || !strings.HasPrefix(StatePrefix(a), "dp:") {
			t.Fatal(StatePrefix(a), StatePrefix(b))
		}
	})
}
