package config

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/dual-proxy/dual-proxy/internal/testbed/fixtures"
)

// configDocs are the documents whose YAML examples are configuration files
// (paths from the module root).
var configDocs = []string{"README.md", "docs/POOL.md", "docs/operations.md", "docs/flags.md", "docs/team-pool.md", "pool/README.md"}

// fixtureEnv is the environment the example files are loaded with: every
// api_key_env variable they name has a fake key, "sk-test-" and its name.
func fixtureEnv(name string) string { return "sk-test-" + name }

// docsMeaning is, for each example file of testdata/config, what the
// document showing it says it means, checked on the loaded configuration.
var docsMeaning = map[string]func(t *testing.T, c *Config){
	// README.md, "Model pool": two channels of two APIs in one pool, sticky
	// by default, one unified model with a target per member.
	"readme-pool.yaml": func(t *testing.T, c *Config) {
		wantChannel(t, c, "deepseek", APIAnthropic, "https://api.deepseek.com/anthropic", "DEEPSEEK_KEY")
		wantChannel(t, c, "kimi", APIOpenAIChat, "https://api.moonshot.cn/v1", "KIMI_KEY")
		p := wantPool(t, c, "mypool", StrategySticky, "deepseek", "kimi")
		wantTargets(t, p, "fast", map[string]string{"deepseek": "deepseek-chat", "kimi": "kimi-k2"})
		if p.API != APIMixed {
			t.Errorf("mypool's API is %q; members of two APIs make a mixed pool, calls translated per member", p.API)
		}
	},
	// docs/POOL.md, "Configuration": six channels of four APIs, a
	// sticky pool with its own cooldowns and timeouts, an OpenAI pool and a
	// pool of three APIs.
	"pool-guide.yaml": func(t *testing.T, c *Config) {
		wantChannel(t, c, "deepseek", APIAnthropic, "https://api.deepseek.com/anthropic", "DEEPSEEK_KEY")
		ustc := wantChannel(t, c, "ustc", APIAnthropic, "https://llm.example.edu/anthropic", "USTC_KEY")
		if m := ustc.Model("deepseek-v4.1-flash"); m == nil || m.ContextWindow != 131072 || m.MaxTokens != 32768 ||
			strings.Join(m.Efforts, ",") != "low,medium,high" || strings.Join(m.Input, ",") != "text" {
			t.Errorf("ustc's declared model is %+v", m)
		}
		wantChannel(t, c, "openai-a", APIOpenAI, "https://api.openai.com/v1", "OPENAI_A_KEY")
		wantChannel(t, c, "openai-b", APIOpenAI, "https://gateway.example.com/v1", "OPENAI_B_KEY")
		wantChannel(t, c, "kimi", APIOpenAIChat, "https://api.moonshot.cn/v1", "KIMI_KEY")
		wantChannel(t, c, "gemini", APIGemini, "https://generativelanguage.googleapis.com", "GEMINI_KEY")
		p := wantPool(t, c, "claude-pool", StrategySticky, "deepseek", "ustc")
		wantTargets(t, p, "flash", map[string]string{"deepseek": "deepseek-chat", "ustc": "deepseek-v4.1-flash"})
		if m := p.Model("flash"); m == nil || m.EffortMap["ustc"]["max"] != "high" {
			t.Errorf("flash's effort_map does not map max to high for ustc: %+v", m)
		}
		if p.Cooldown.Auth != 10*time.Minute || p.Cooldown.Server != 30*time.Second {
			t.Errorf("claude-pool's cooldowns are %+v, want auth 10 min, server 30 s", p.Cooldown)
		}
		if p.Cooldown.RateLimit != DefaultCooldown.RateLimit {
			t.Errorf("an unnamed cooldown class is %v, want the default %v", p.Cooldown.RateLimit, DefaultCooldown.RateLimit)
		}
		if p.SessionTTL != time.Hour || p.FirstOutputTimeout != 90*time.Second {
			t.Errorf("claude-pool's session TTL %v, first output timeout %v; want 1 h and 90 s", p.SessionTTL, p.FirstOutputTimeout)
		}
		if p := wantPool(t, c, "codex-pool", StrategySticky, "openai-a", "openai-b"); p.API != APIOpenAI || len(p.Models) != 0 {
			t.Errorf("codex-pool serves API %q with models %v; want openai and any model id", p.API, p.ModelIDs())
		}
		if p := wantPool(t, c, "any-pool", StrategySticky, "deepseek", "kimi", "gemini"); p.API != APIMixed {
			t.Errorf("any-pool's API is %q, want %q (members of three APIs)", p.API, APIMixed)
		}
	},
	// docs/POOL.md, "Try the pool offline": two mock channels in a failover
	// pool, the failing one first.
	"pool-try.yaml": func(t *testing.T, c *Config) {
		wantChannel(t, c, "down", APIAnthropic, "http://127.0.0.1:18101", "MOCK_KEY")
		wantChannel(t, c, "up", APIAnthropic, "http://127.0.0.1:18100", "MOCK_KEY")
		wantPool(t, c, "try", StrategyFailover, "down", "up")
	},
	// pool/README.md, "Configuration": every key of a channel and a pool,
	// each comment a meaning.
	"pool-reference.yaml": func(t *testing.T, c *Config) {
		wantChannel(t, c, "ustc", APIAnthropic, "https://…/anthropic", "USTC_KEY")
		b := c.Channel("ustc-b")
		if b == nil || b.AuthHeader != "x-api-key" || !b.AutoCache() || b.APIKeyEnv != "" {
			t.Fatalf("ustc-b is %+v, want an inline key sent as x-api-key with breakpoints placed by the pool", b)
		}
		h := http.Header{}
		b.Authorize(h)
		if h.Get("x-api-key") != "sk-test-…" {
			t.Errorf("ustc-b's inline key is sent as %q", h.Get("x-api-key"))
		}
		p := wantPool(t, c, "ustc-pool", StrategySticky, "ustc", "ustc-b")
		if p.DisplayName != "USTC pool" {
			t.Errorf("display name %q", p.DisplayName)
		}
		m := p.Model("deepseek-flash")
		if m == nil || m.ContextWindow != 262144 || m.EffortMap["ustc-b"]["max"] != "high" {
			t.Fatalf("deepseek-flash is %+v", m)
		}
		if got := p.Target(m, "deepseek-flash", "ustc"); got != "deepseek-flash" {
			t.Errorf("a member without a target is sent %q; the default target is the unified id", got)
		}
		if got := p.Target(m, "deepseek-flash", "ustc-b"); got != "deepseek-v4.1-flash" {
			t.Errorf("ustc-b is sent %q", got)
		}
		want := CooldownConfig{Auth: 10 * time.Minute, Quota: 10 * time.Minute, RateLimit: time.Minute, Server: 30 * time.Second,
			Timeout: 30 * time.Second, Empty: 30 * time.Second, Network: 30 * time.Second, ModelNotFound: 10 * time.Minute}
		if p.Cooldown != want {
			t.Errorf("cooldowns %+v, want %+v", p.Cooldown, want)
		}
		if p.SessionTTL != time.Hour || p.FirstOutputTimeout != 90*time.Second || p.ResponseTimeout != 10*time.Minute ||
			p.StreamIdleTimeout != 5*time.Minute || p.KeepaliveHold != 3*time.Second || p.RateLimitWait != 10*time.Second || p.StreamUpstream {
			t.Errorf("timeouts %+v", p)
		}
	},
}

// wantChannel checks that c has channel id of api at base whose key comes
// from the variable env (sent as the API's key header), and returns it.
func wantChannel(t *testing.T, c *Config, id, api, base, env string) *Channel {
	t.Helper()
	ch := c.Channel(id)
	if ch == nil {
		t.Fatalf("no channel %q", id)
	}
	if ch.API != api || ch.BaseURL != base || ch.APIKeyEnv != env {
		t.Errorf("channel %s: api %q, base_url %q, api_key_env %q; want %q, %q, %q", id, ch.API, ch.BaseURL, ch.APIKeyEnv, api, base, env)
	}
	h := http.Header{}
	ch.Authorize(h)
	found := false
	for _, v := range h {
		for _, s := range v {
			found = found || strings.Contains(s, fixtureEnv(env))
		}
	}
	if !found {
		t.Errorf("channel %s does not send the key of %s: %v", id, env, h)
	}
	return ch
}

// wantPool checks that c has pool id with strategy and members, in order.
func wantPool(t *testing.T, c *Config, id, strategy string, members ...string) *PoolConfig {
	t.Helper()
	p := c.Pool(id)
	if p == nil {
		t.Fatalf("no pool %q (pools %v)", id, c.PoolIDs())
	}
	if p.Strategy != strategy || strings.Join(p.Members, ",") != strings.Join(members, ",") {
		t.Errorf("pool %s: strategy %q, members %v; want %q, %v", id, p.Strategy, p.Members, strategy, members)
	}
	return p
}

// wantTargets checks the member model ids of p's unified model id.
func wantTargets(t *testing.T, p *PoolConfig, id string, targets map[string]string) {
	t.Helper()
	m := p.Model(id)
	if m == nil {
		t.Fatalf("pool %s has no model %q (models %v)", p.ID, id, p.ModelIDs())
	}
	for member, want := range targets {
		if got := p.Target(m, id, member); got != want {
			t.Errorf("pool %s model %s: member %s is sent %q, want %q", p.ID, id, member, got, want)
		}
	}
}

// TestExampleConfigsLoad loads every example configuration of
// testdata/config with the pool's loader, as dual-proxy loads --config
// (SPEC POOL-3): each is accepted and means what the document showing it
// says.
func TestExampleConfigsLoad(t *testing.T) {
	for _, p := range fixtures.Glob(t, "config/*.yaml") {
		name := filepath.Base(p)
		t.Run("POOL-3/"+name, func(t *testing.T) {
			c, err := LoadConfig(p, fixtureEnv)
			if err != nil {
				t.Fatalf("the example is refused: %v", err)
			}
			meaning := docsMeaning[name]
			if meaning == nil {
				t.Fatalf("no check of what %s means: add one to docsMeaning", name)
			}
			meaning(t, c)
		})
	}
}

// yamlFence opens a YAML block of a Markdown document; its indentation is
// the block's. yamlHeredoc opens a shell here-document that writes a .yaml
// file (`cat > /tmp/x.yaml <<'YAML'`); its delimiter ends it.
var (
	yamlFence   = regexp.MustCompile("^(\\s*)```ya?ml\\s*$")
	yamlHeredoc = regexp.MustCompile(`\.ya?ml\s*<<-?\s*'?(\w+)'?\s*$`)
)

// docBlocks returns the YAML files the Markdown document md shows, each as
// the file it is (the fence's indentation removed, a final newline): its
// YAML blocks and the here-documents of its shell blocks that write a
// .yaml file.
func docBlocks(md string) []string {
	var out, cur []string
	in, indent, end := false, "", ""
	for _, line := range strings.Split(md, "\n") {
		switch {
		case !in:
			if m := yamlFence.FindStringSubmatch(line); m != nil {
				in, indent, end, cur = true, m[1], "```", nil
			} else if m := yamlHeredoc.FindStringSubmatch(line); m != nil {
				in, indent, end, cur = true, "", m[1], nil
			}
		case strings.TrimSpace(line) == end:
			in = false
			out = append(out, strings.Join(cur, "\n")+"\n")
		default:
			cur = append(cur, strings.TrimPrefix(line, indent))
		}
	}
	return out
}

// TestDocsConfigExamplesAreFixtures keeps the documents' configuration
// examples and testdata/config one set (SPEC POOL-3): every YAML block or
// here-document of the documents that is a whole configuration file (it
// has pools:) is,
// byte for byte, one of the example files, and every example file is shown
// by a document. An example edited in one place only fails here, so the
// example a reader copies is always one the loader accepts.
func TestDocsConfigExamplesAreFixtures(t *testing.T) {
	files := map[string]string{}
	for _, p := range fixtures.Glob(t, "config/*.yaml") {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files[string(b)] = filepath.Base(p)
	}
	shown := map[string]bool{}
	for _, doc := range configDocs {
		t.Run("POOL-3/"+doc, func(t *testing.T) {
			md, err := os.ReadFile(filepath.Join(fixtures.Root(t), "..", filepath.FromSlash(doc)))
			if err != nil {
				t.Fatal(err)
			}
			for i, block := range docBlocks(string(md)) {
				var top map[string]yaml.Node
				if err := yaml.Unmarshal([]byte(block), &top); err != nil {
					t.Errorf("YAML block %d is not YAML: %v", i+1, err)
					continue
				}
				if _, whole := top["pools"]; !whole {
					continue // a fragment to add to a file (state:, a channel)
				}
				name, ok := files[block]
				if !ok {
					t.Errorf("YAML block %d is a configuration file that is not in testdata/config (or differs from it):\n%s", i+1, block)
					continue
				}
				shown[name] = true
			}
		})
	}
	t.Run("POOL-3/every-example-is-shown", func(t *testing.T) {
		for _, name := range files {
			if !shown[name] {
				t.Errorf("testdata/config/%s is shown by no document (%s)", name, strings.Join(configDocs, ", "))
			}
		}
	})
}
