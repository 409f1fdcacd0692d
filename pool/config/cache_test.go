package config

import (
	"strings"
	"testing"
)

func TestCacheBreakpointsOption(t *testing.T) {
	parse := func(chKeys string) (*Config, error) {
		return ParseConfig([]byte("channels:\n  a: {api: anthropic, base_url: \"http://127.0.0.1:1\", api_key: sk-test-a-0123456789"+chKeys+
			"}\n  o: {api: openai-chat, base_url: \"http://127.0.0.1:2\", api_key: sk-test-o-0123456789}\npools:\n  p:\n    members: [a, o]\n"), nil)
	}
	t.Run("POOL-24/cache-breakpoints-auto-by-default-off-on-request", func(t *testing.T) {
		cfg, err := parse("")
		if err != nil || !cfg.Channel("a").AutoCache() {
			t.Fatalf("default: %v %+v", err, cfg)
		}
		cfg, err = parse(", cache_breakpoints: off")
		if err != nil || cfg.Channel("a").AutoCache() {
			t.Fatalf("off: %v", err)
		}
		if !strings.Contains(cfg.Redacted(), "cache_breakpoints: \"off\"") && !strings.Contains(cfg.Redacted(), "cache_breakpoints: off") {
			t.Fatalf("--print-config lost it:\n%s", cfg.Redacted())
		}
		if cfg, err = parse(", cache_breakpoints: auto"); err != nil || !cfg.Channel("a").AutoCache() {
			t.Fatalf("auto: %v", err)
		}
	})
	t.Run("POOL-24/cache-breakpoints-bad-value-or-api-named", func(t *testing.T) {
		if _, err := parse(", cache_breakpoints: maybe"); err == nil || !strings.Contains(err.Error(), "channels.a.cache_breakpoints") || !strings.Contains(err.Error(), "auto or off") {
			t.Fatalf("bad value: %v", err)
		}
		_, err := ParseConfig([]byte("channels:\n  o: {api: openai, base_url: \"http://127.0.0.1:2\", api_key: sk-test-o-0123456789, cache_breakpoints: off}\npools:\n  p:\n    members: [o]\n"), nil)
		if err == nil || !strings.Contains(err.Error(), "channels.o.cache_breakpoints") || !strings.Contains(err.Error(), "only for api anthropic") {
			t.Fatalf("on an openai channel: %v", err)
		}
	})
}
