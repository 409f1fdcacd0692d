package config

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

const sampleYAML = `
channels:
  ustc:   {api: anthropic, base_url: "https://user:pw@ustc.example/anthropic", api_key_env: USTC_KEY}
  ustc-b: {api: anthropic, base_url: https://b.example, api_key_env: USTC_B_KEY,
           models: [{id: deepseek-v4.1-flash, context_window: 131072, max_tokens: 32768,
                     input: [text], efforts: [low, medium, high]}]}
  ustc-c: {api: anthropic, base_url: https://c.example, api_key: sk-inline-SECRET-ccc,
           models: [{id: deepseek-flash, context_window: 262144, max_tokens: 65536, input: [text, image], efforts: [low, medium, high, max]}]}
  oa:     {api: openai, base_url: https://oa.example, api_key: sk-openai-SECRET}
pools:
  ustc-pool:
    display_name: USTC pool
    strategy: sticky
    members: [ustc, ustc-b, ustc-c]
    models:
      - id: deepseek-flash
        targets: {ustc: deepseek-flash, ustc-b: deepseek-v4.1-flash}
        effort_map: {ustc-b: {max: high}}
      - id: big
        context_window: 262144
    cooldown: {auth_ms: 700000, server_ms: 31000}
    first_output_timeout_ms: 5000
`

var sampleEnv = map[string]string{"USTC_KEY": "sk-env-SECRET-aaa", "USTC_B_KEY": "sk-env-SECRET-bbb"}

func sampleGetenv(k string) string { return sampleEnv[k] }

func TestParseConfigSample(t *testing.T) {
	cfg, err := ParseConfig([]byte(sampleYAML), sampleGetenv)
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Pool("ustc-pool")
	if p == nil || p.API != APIAnthropic || p.Strategy != StrategySticky || len(p.Members) != 3 {
		t.Fatalf("pool = %+v", p)
	}
	t.Run("POOL-10/cooldown-overrides", func(t *testing.T) {
		if p.Cooldown.Auth != 700*time.Second || p.Cooldown.Server != 31*time.Second || p.Cooldown.Quota != 600*time.Second {
			t.Fatalf("cooldown = %+v", p.Cooldown)
		}
		if p.FirstOutputTimeout != 5*time.Second || p.SessionTTL != DefaultSessionTTL {
			t.Fatalf("timeouts %v %v", p.FirstOutputTimeout, p.SessionTTL)
		}
	})
	t.Run("POOL-2/target-default-same-id", func(t *testing.T) {
		m := p.Model("deepseek-flash")
		if got := p.Target(m, m.ID, "ustc-b"); got != "deepseek-v4.1-flash" {
			t.Fatal(got)
		}
		if got := p.Target(m, m.ID, "ustc-c"); got != "deepseek-flash" {
			t.Fatal(got)
		}
	})
	t.Run("POOL-12/merge", func(t *testing.T) {
		c := MergeCaps(cfg, p, p.Model("deepseek-flash"))
		if c.ContextWindow != 131072 || c.MaxTokens != 32768 {
			t.Fatalf("limits %+v", c)
		}
		if strings.Join(c.Input, ",") != "text,image" {
			t.Fatalf("input union %v", c.Input)
		}
		// ustc-b lacks max but maps max→high; ustc declares nothing.
		if strings.Join(c.Efforts, ",") != "low,medium,high,max" {
			t.Fatalf("efforts %v", c.Efforts)
		}
		big := MergeCaps(cfg, p, p.Model("big"))
		if big.ContextWindow != 262144 {
			t.Fatalf("override %+v", big)
		}
	})
	t.Run("POOL-12/cannot-serve", func(t *testing.T) {
		m := p.Model("deepseek-flash")
		if r := CannotServe(cfg, p, m, m.ID, "ustc-b", Demands{HasImage: true}); r == "" {
			t.Fatal("text-only member took an image")
		}
		if r := CannotServe(cfg, p, m, m.ID, "ustc-b", Demands{MaxTokens: 64000}); r != "" {
			t.Fatalf("max_tokens above the limit skips the member (POOL-25 lowers it): %s", r)
		}
		for member, want := range map[string]int{"ustc-b": 32768, "ustc-c": 65536, "ustc": 0} {
			if n := MemberMaxTokens(cfg, p, m, m.ID, member); n != want {
				t.Fatalf("POOL-25: %s's output limit %d, want %d", member, n, want)
			}
		}
		if r := CannotServe(cfg, p, m, m.ID, "ustc-b", Demands{Effort: "max"}); r != "" {
			t.Fatalf("effort_map ignored: %s", r)
		}
		if r := CannotServe(cfg, p, m, m.ID, "ustc", Demands{HasImage: true, MaxTokens: 1 << 20}); r != "" {
			t.Fatalf("unknown capabilities must be eligible: %s", r)
		}
	})
}

func TestConfigErrorsNamePath(t *testing.T) {
	base := "channels:\n  a: {api: anthropic, base_url: http://127.0.0.1:1, api_key: k1}\n  b: {api: anthropic, base_url: http://127.0.0.1:2, api_key: k2}\n  o: {api: openai, base_url: http://127.0.0.1:3, api_key: k3}\n"
	cases := []struct{ name, yaml, want string }{
		{"POOL-3/unknown-member", base + "pools:\n  p: {members: [a, b, x]}\n", `pools.p.members[2]: unknown channel "x"`},
		{"POOL-3/pool-id-equals-channel", base + "pools:\n  a: {members: [b]}\n", `pools.a: pool id "a" equals a channel id`},
		{"POOL-3/pool-in-pool", base + "pools:\n  p: {members: [a]}\n  q: {members: [b, p]}\n", `pools.q.members[1]: "p" is a pool`},
		{"POOL-3/unknown-key", base + "pools:\n  p: {members: [a], stratgy: sticky}\n", `pools.p.stratgy: unknown key (did you mean strategy?)`},
		{"POOL-3/unknown-top-level-key", base + "pools:\n  p: {members: [a]}\nmodles: []\n", `modles: unknown key (sections: channels, pools, proxy, state)`},
		{"POOL-3/top-level-typo-did-you-mean-with-every-section", base + "pools:\n  p: {members: [a]}\nstat: {url: memory}\n", `stat: unknown key (did you mean state? sections: channels, pools, proxy, state)`},
		{"POOL-3/top-level-typo", base + "pool:\n  p: {members: [a]}\n", `pool: unknown key (did you mean pools? sections: channels, pools, proxy, state)`},
		{"POOL-3/model-key-typo", base + "pools:\n  p: {members: [a], models: [{id: m, tragets: {a: x}}]}\n", `pools.p.models[0].tragets: unknown key (did you mean targets?)`},
		{"POOL-3/channel-model-key-typo", "channels:\n  a: {api: anthropic, base_url: http://x, api_key: k, models: [{id: m, max_token: 5}]}\n", `channels.a.models[0].max_token: unknown key (did you mean max_tokens?)`},
		{"POOL-3/cooldown-class-typo", base + "pools:\n  p: {members: [a], cooldown: {auth: 5}}\n", `pools.p.cooldown.auth: unknown key (known: auth_ms, quota_ms`},
		{"POOL-15/all-missing-keys-at-once", "channels:\n  a: {api: anthropic, base_url: http://x, api_key_env: NOPE_A}\n  b: {api: anthropic, base_url: http://x, api_key: k1}\n  c: {api: anthropic, base_url: http://x, api_key_env: NOPE_C}\npools:\n  p: {members: [a, b, c]}\n",
			`channels.a.api_key_env: environment variable NOPE_A is empty or unset (line 2, column 43); channels.c.api_key_env: environment variable NOPE_C is empty or unset (line 4, column 43)`},
		{"POOL-3/bad-strategy", base + "pools:\n  p: {members: [a], strategy: random}\n", `pools.p.strategy: unknown strategy "random"`},
		{"POOL-3/target-not-member", base + "pools:\n  p: {members: [a], models: [{id: m, targets: {b: x}}]}\n", `pools.p.models[0].targets.b: not a member`},
		{"POOL-3/bad-cooldown", base + "pools:\n  p: {members: [a], cooldown: {auth_ms: -1}}\n", `pools.p.cooldown.auth_ms: expected milliseconds`},
		{"POOL-3/bad-effort", "channels:\n  a: {api: anthropic, base_url: http://x, api_key: k, models: [{id: m, efforts: [huge]}]}\n", `channels.a.models[0].efforts[0]: unknown effort "huge"`},
		{"POOL-3/bad-api", "channels:\n  a: {api: vertex, base_url: http://x, api_key: k}\n", `channels.a.api: unknown api "vertex"`},
		{"POOL-3/api-typo-did-you-mean", "channels:\n  a: {api: anthropc, base_url: http://x, api_key: k}\n", `channels.a.api: unknown api "anthropc" (did you mean anthropic?)`},
		{"POOL-3/bad-base-url", "channels:\n  a: {api: anthropic, base_url: 'ftp://x', api_key: k}\n", `channels.a.base_url: base_url must be`},
		{"POOL-15/empty-env", "channels:\n  a: {api: anthropic, base_url: http://x, api_key_env: NOPE}\n", `channels.a.api_key_env: environment variable NOPE is empty`},
		{"POOL-15/no-key", "channels:\n  a: {api: anthropic, base_url: http://x}\n", `channels.a: no key`},
		{"POOL-3/members-not-list", base + "pools:\n  p: {members: a}\n", `pools.p.members: expected a list`},
		{"POOL-3/duplicate-model", base + "pools:\n  p: {members: [a], models: [{id: m}, {id: m}]}\n", `pools.p.models[1].id: model "m" defined twice`},
		{"POOL-3/empty-members", base + "pools:\n  p: {members: []}\n", `pools.p.members: a pool needs at least one member`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(c.yaml), func(string) string { return "" })
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want containing %q", err, c.want)
			}
			if strings.Contains(err.Error(), "k1") || strings.Contains(err.Error(), "k3") {
				t.Fatalf("key in error: %v", err)
			}
		})
	}
}

// TestConfigErrorsHideMisplacedKeys: a key typed into the wrong field is not
// echoed by the error that field's validation gives (SPEC POOL-15).
func TestConfigErrorsHideMisplacedKeys(t *testing.T) {
	const key = "sk-ant-api03-MISPLACED0123456789abcdef"
	const alnum = "MISPLACEDKEY0123456789ABCDEF0123456789XYZ0123"
	cases := []struct{ name, yaml, want string }{
		{"POOL-15/key-in-api_key_env", "channels:\n  a: {api: anthropic, base_url: http://x, api_key_env: " + key + "}\n",
			"channels.a.api_key_env: is not a valid environment variable name"},
		{"POOL-15/key-in-api_key_env-with-inline-key", "channels:\n  a: {api: anthropic, base_url: http://x, api_key_env: " + key + ", api_key: k}\n",
			"channels.a.api_key_env: is not a valid environment variable name"},
		{"POOL-15/alnum-key-in-api_key_env", "channels:\n  a: {api: anthropic, base_url: http://x, api_key_env: " + alnum + "}\n",
			"channels.a.api_key_env: the environment variable it names is empty or unset"},
		{"POOL-15/key-in-auth", "channels:\n  a: {api: anthropic, base_url: http://x, api_key: k, auth: " + key + "}\n",
			"channels.a.auth: unknown auth (value not shown)"},
		{"POOL-15/key-in-api", "channels:\n  a: {api: " + key + ", base_url: http://x, api_key: k}\n",
			"channels.a.api: unknown api (value not shown)"},
		{"POOL-3/typo-still-echoed", "channels:\n  a: {api: anthropic, base_url: http://x, api_key: k, auth: Bearer}\n",
			`channels.a.auth: unknown auth "Bearer"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(c.yaml), func(string) string { return "" })
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want containing %q", err, c.want)
			}
			if strings.Contains(err.Error(), "MISPLACED") {
				t.Fatalf("key echoed in error: %v", err)
			}
		})
	}
}

func TestRedactedNeverShowsKeys(t *testing.T) {
	cfg, err := ParseConfig([]byte(sampleYAML), sampleGetenv)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("POOL-15/redacted", func(t *testing.T) {
		out := cfg.Redacted()
		for _, s := range []string{"SECRET", "pw@"} {
			if strings.Contains(out, s) {
				t.Fatalf("%q in Redacted():\n%s", s, out)
			}
		}
		for _, want := range []string{"ustc-pool", "deepseek-flash", "deepseek-v4.1-flash", "api_key_env: USTC_KEY", "api_key: '***'", "context_window: 131072"} {
			if !strings.Contains(out, want) {
				t.Fatalf("%q missing in:\n%s", want, out)
			}
		}
	})
	t.Run("POOL-15/fmt-and-slog", func(t *testing.T) {
		var buf bytes.Buffer
		lg := slog.New(slog.NewJSONHandler(&buf, nil))
		for _, ch := range cfg.Channels {
			fmt.Fprintf(&buf, "%v %+v %#v %s\n", ch, ch, ch, ch.key)
			fmt.Fprintf(&buf, "%v %+v\n", *ch, *ch)
			lg.Info("x", "ch", ch, "key", ch.key)
		}
		fmt.Fprintf(&buf, "%+v\n", cfg)
		if strings.Contains(buf.String(), "SECRET") {
			t.Fatalf("key leaked: %s", buf.String())
		}
	})
}

func TestMixedPools(t *testing.T) {
	t.Run("POOL-21/members-of-every-api-in-one-pool", func(t *testing.T) {
		cfg, err := ParseConfig([]byte("channels:\n  a: {api: anthropic, base_url: http://127.0.0.1:1, api_key: k1}\n"+
			"  o: {api: openai, base_url: http://127.0.0.1:2, api_key: k2}\n  c: {api: openai-chat, base_url: http://127.0.0.1:3, api_key: k3}\n"+
			"  g: {api: gemini, base_url: http://127.0.0.1:4, api_key: k4}\npools:\n  mix: {members: [a, o, c, g]}\n  one: {members: [g]}\n"), func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		if api := cfg.Pool("mix").API; api != APIMixed {
			t.Errorf("mixed pool API %q", api)
		}
		if api := cfg.Pool("one").API; api != APIGemini {
			t.Errorf("gemini pool API %q", api)
		}
		for id, want := range map[string]string{"a": "x-api-key", "o": "bearer", "c": "bearer", "g": "x-goog-api-key"} {
			if got := cfg.Channel(id).AuthHeader; got != want {
				t.Errorf("%s: default auth %q, want %q", id, got, want)
			}
		}
	})
}

func TestKeepaliveHold(t *testing.T) {
	parse := func(t *testing.T, extra string) *PoolConfig {
		t.Helper()
		cfg, err := ParseConfig([]byte("channels:\n  a: {api: anthropic, base_url: \"http://127.0.0.1:1\", api_key: sk-test-a-0123456789}\npools:\n  p:\n    members: [a]\n"+extra), func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		return cfg.Pool("p")
	}
	t.Run("POOL-7b/default-hold", func(t *testing.T) {
		if got := parse(t, "").KeepaliveHold; got != 3*time.Second {
			t.Fatalf("default hold %v", got)
		}
	})
	t.Run("POOL-7b/hold-0-is-off", func(t *testing.T) {
		if got := parse(t, "    keepalive_hold_ms: 0\n").KeepaliveHold; got != 0 {
			t.Fatalf("hold %v", got)
		}
	})
	t.Run("POOL-7b/hold-negative-is-an-error", func(t *testing.T) {
		_, err := ParseConfig([]byte("channels:\n  a: {api: anthropic, base_url: \"http://127.0.0.1:1\", api_key: sk-test-a-0123456789}\npools:\n  p:\n    members: [a]\n    keepalive_hold_ms: -5\n"), func(string) string { return "" })
		if err == nil || !strings.Contains(err.Error(), "keepalive_hold_ms") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("POOL-7b/stream-upstream-off-by-default", func(t *testing.T) {
		if parse(t, "").StreamUpstream || !parse(t, "    stream_upstream: true\n").StreamUpstream {
			t.Fatal("stream_upstream: default must be off, true must turn it on")
		}
	})
	t.Run("POOL-26/rate-limit-wait-default-10s-0-off", func(t *testing.T) {
		if got := parse(t, "").RateLimitWait; got != 10*time.Second {
			t.Fatalf("default %v", got)
		}
		if got := parse(t, "    rate_limit_wait_ms: 0\n").RateLimitWait; got != 0 {
			t.Fatalf("0: %v", got)
		}
		if got := parse(t, "    rate_limit_wait_ms: 2500\n").RateLimitWait; got != 2500*time.Millisecond {
			t.Fatalf("2500: %v", got)
		}
	})
	t.Run("POOL-7b/stream-upstream-not-a-bool-is-an-error", func(t *testing.T) {
		_, err := ParseConfig([]byte("channels:\n  a: {api: anthropic, base_url: \"http://127.0.0.1:1\", api_key: sk-test-a-0123456789}\npools:\n  p:\n    members: [a]\n    stream_upstream: maybe\n"), func(string) string { return "" })
		if err == nil || !strings.Contains(err.Error(), "stream_upstream") {
			t.Fatalf("err %v", err)
		}
	})
}
