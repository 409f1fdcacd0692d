package config

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// secret holds a channel key. Every formatting path prints "***"; only
// (*secret).reveal returns the value, for the one header that carries it
// upstream.
type secret struct {
	v      string
	inline bool // the config had api_key (shown as "***")
}

func (s *secret) String() string               { return "***" }
func (s *secret) GoString() string             { return "***" }
func (s *secret) LogValue() slog.Value         { return slog.StringValue("***") }
func (s *secret) MarshalJSON() ([]byte, error) { return []byte(`"***"`), nil }
func (s *secret) MarshalYAML() (any, error)    { return "***", nil }
func (s *secret) Format(f fmt.State, _ rune)   { _, _ = f.Write([]byte("***")) }

func (s *secret) reveal() string {
	if s == nil {
		return ""
	}
	return s.v
}

// HasKey reports whether the channel has a non-empty key. The key itself is
// unexported on purpose: it leaves this package only through Authorize and
// the Scrubber.
func (ch *Channel) HasKey() bool { return ch.key != nil && ch.key.v != "" }

// Same reports whether o is ch as configured: every field and the key
// alike (a reload logs the channels that changed by id, never their keys).
func (ch *Channel) Same(o *Channel) bool {
	a, b := *ch, *o
	a.key, b.key = nil, nil
	return ch.key.reveal() == o.key.reveal() && (ch.key != nil && ch.key.inline) == (o.key != nil && o.key.inline) && reflect.DeepEqual(a, b)
}

// Authorize sets the channel's key on an upstream request's header h, the
// way AuthHeader says: "bearer" as Authorization: Bearer KEY,
// "x-goog-api-key" as X-Goog-Api-Key (Gemini), else as X-Api-Key.
func (ch *Channel) Authorize(h http.Header) {
	switch ch.AuthHeader {
	case "bearer":
		h.Set("Authorization", "Bearer "+ch.key.reveal())
	case "x-goog-api-key":
		h.Set("X-Goog-Api-Key", ch.key.reveal())
	default:
		h.Set("X-Api-Key", ch.key.reveal())
	}
}

// Scrubber replaces every configured key in a text with "***"; used on
// upstream error messages before they reach logs, status or clients, and on
// everything relayed from an upstream (header values, bodies, events). The
// keys are kept as strings and as bytes so the per-event check allocates
// nothing.
type Scrubber struct {
	keys  []string
	bkeys [][]byte
}

// NewScrubber returns the Scrubber for every key of cfg (keys shorter than
// 4 bytes are not scrubbed: they would match ordinary text).
func NewScrubber(cfg *Config) Scrubber {
	var s Scrubber
	for _, ch := range cfg.Channels {
		if k := ch.key.reveal(); len(k) >= 4 {
			s.keys = append(s.keys, k)
			s.bkeys = append(s.bkeys, []byte(k))
		}
	}
	return s
}

// Scrub returns text with every configured key replaced by "***".
func (s Scrubber) Scrub(text string) string {
	for _, k := range s.keys {
		if strings.Contains(text, k) {
			text = strings.ReplaceAll(text, k, "***")
		}
	}
	return text
}

// ScrubBytes is Scrub for bodies and events passed through to the client
// (an upstream that echoes the key must not hand it to a local client).
// It returns b itself when no key occurs: one
// bytes.Contains per key, no allocation.
func (s Scrubber) ScrubBytes(b []byte) []byte {
	for _, k := range s.bkeys {
		if bytes.Contains(b, k) {
			b = bytes.ReplaceAll(b, k, []byte("***"))
		}
	}
	return b
}

// ScrubHeader scrubs every value of h in place.
func (s Scrubber) ScrubHeader(h http.Header) {
	if len(s.keys) == 0 {
		return
	}
	for _, vs := range h {
		for i, v := range vs {
			vs[i] = s.Scrub(v)
		}
	}
}

// redactURL hides userinfo in a base URL.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable)"
	}
	return u.Redacted()
}

// Redacted renders the effective configuration as YAML for --print-config (SPEC
// LIS-4, POOL-15): channels (api, base URL with userinfo redacted, key source,
// key shown as "***"), pools with members, strategy, timeouts, cooldowns and
// each unified model with its targets and merged capabilities. It never
// contains a key.
func (c *Config) Redacted() string {
	root := mapNode()
	chans := mapNode()
	for _, ch := range c.Channels {
		n := mapNode("api", ch.API, "base_url", redactURL(ch.BaseURL), "auth", ch.AuthHeader)
		if ch.APIKeyEnv != "" {
			add(n, "api_key_env", ch.APIKeyEnv)
		}
		if ch.key != nil && ch.key.inline {
			add(n, "api_key", "***")
		}
		add(n, "key", map[bool]string{true: "***", false: "(none)"}[ch.HasKey()])
		if len(ch.Models) > 0 {
			ms := &yaml.Node{Kind: yaml.SequenceNode, Style: 0}
			for _, m := range ch.Models {
				ms.Content = append(ms.Content, capsNode(mapNode("id", m.ID), Capabilities{ContextWindow: m.ContextWindow, MaxTokens: m.MaxTokens, Input: m.Input, Efforts: m.Efforts}))
			}
			add(n, "models", ms)
		}
		if ch.CacheBreakpoints != "" {
			add(n, "cache_breakpoints", ch.CacheBreakpoints)
		}
		add(chans, ch.ID, n)
	}
	add(root, "channels", chans)
	pools := mapNode()
	for _, p := range c.Pools {
		n := mapNode("display_name", p.DisplayName, "api", p.API, "strategy", p.Strategy,
			"members", strList(p.Members),
			"session_ttl_ms", p.SessionTTL.Milliseconds(), "first_output_timeout_ms", p.FirstOutputTimeout.Milliseconds(),
			"response_timeout_ms", p.ResponseTimeout.Milliseconds(), "stream_idle_timeout_ms", p.StreamIdleTimeout.Milliseconds())
		cd := p.Cooldown
		add(n, "cooldown", mapNode("auth_ms", cd.Auth.Milliseconds(), "quota_ms", cd.Quota.Milliseconds(),
			"rate_limit_ms", cd.RateLimit.Milliseconds(), "server_ms", cd.Server.Milliseconds(),
			"timeout_ms", cd.Timeout.Milliseconds(), "empty_ms", cd.Empty.Milliseconds(),
			"network_ms", cd.Network.Milliseconds(), "model_not_found_ms", cd.ModelNotFound.Milliseconds()))
		ms := &yaml.Node{Kind: yaml.SequenceNode}
		for i := range p.Models {
			m := &p.Models[i]
			targets := mapNode()
			for _, mem := range p.Members {
				add(targets, mem, p.Target(m, m.ID, mem))
			}
			mn := mapNode("id", m.ID, "name", m.Name, "targets", targets)
			ms.Content = append(ms.Content, capsNode(mn, MergeCaps(c, p, m)))
		}
		if len(ms.Content) == 0 {
			add(n, "models", "(any model id, sent unchanged)")
		} else {
			add(n, "models", ms)
		}
		add(pools, p.ID, n)
	}
	add(root, "pools", pools)
	st := mapNode("url", StateMemory)
	if c.State.Shared() {
		st = mapNode("url", RedactStateURL(c.State.URL), "name", strings.TrimSuffix(StatePrefix(c), ":"))
	}
	timeout := c.State.Timeout
	if timeout <= 0 {
		timeout = DefaultStateTimeout
	}
	add(st, "timeout_ms", timeout.Milliseconds())
	add(root, "state", st)
	out, err := yaml.Marshal(root)
	if err != nil {
		return "# cannot render: " + err.Error() + "\n"
	}
	return string(out)
}

func capsNode(n *yaml.Node, c Capabilities) *yaml.Node {
	if c.ContextWindow > 0 {
		add(n, "context_window", c.ContextWindow)
	}
	if c.MaxTokens > 0 {
		add(n, "max_tokens", c.MaxTokens)
	}
	if len(c.Input) > 0 {
		add(n, "input", strList(c.Input))
	}
	if len(c.Efforts) > 0 {
		add(n, "efforts", strList(c.Efforts))
	}
	if c.DefaultEffort != "" {
		add(n, "default_effort", c.DefaultEffort)
	}
	return n
}

func mapNode(kv ...any) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode}
	for i := 0; i+1 < len(kv); i += 2 {
		add(n, kv[i].(string), kv[i+1])
	}
	return n
}

func strList(s []string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
	for _, v := range s {
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: v})
	}
	return n
}

func add(n *yaml.Node, k string, v any) {
	var vn *yaml.Node
	switch x := v.(type) {
	case *yaml.Node:
		vn = x
	case string:
		vn = &yaml.Node{Kind: yaml.ScalarNode, Value: x}
	case int:
		vn = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(x)}
	case int64:
		vn = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(x, 10)}
	default:
		vn = &yaml.Node{Kind: yaml.ScalarNode, Value: fmt.Sprint(x)}
	}
	n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, vn)
}

// envName reports whether s has the shape of an environment variable name
// (POSIX.1-2017 §8.1 portable names: letters, digits, underscore, not
// starting with a digit). A key pasted into api_key_env ("sk-…") fails it.
func envName(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
			return false
		}
	}
	return true
}

// looksSecret reports whether a config value may be a key typed into the
// wrong field, so errors must not echo it: longer than 40
// bytes, or not a conventional UPPER_CASE variable name.
func looksSecret(s string) bool {
	if len(s) > 40 {
		return true
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
			return true
		}
	}
	return false
}

// quoteSafe quotes a value for an error message when it is short and made
// of letters, digits, '-' and '.' (an enum typo such as
// "antropic"); anything else — possibly a key typed into the wrong field —
// is not echoed.
func quoteSafe(s string) string {
	if len(s) > 24 || strings.HasPrefix(strings.ToLower(s), "sk") {
		return hiddenValue
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_') {
			return hiddenValue
		}
	}
	return fmt.Sprintf("%q", s)
}

// hiddenValue stands for a value quoteSafe does not show.
const hiddenValue = "(value not shown)"
