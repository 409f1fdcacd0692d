// Package config is the model pool's configuration: the channels and
// pools decoded from YAML with every error naming its YAML path, the failure
// classes whose cooldowns it sets, the capability table (declared, merged,
// checked against a request), and the channel keys, which never leave this
// package except as the auth header of an upstream request (Channel.Authorize)
// and in the Scrubber.
//
// Keys come only from api_key_env or api_key and never appear in logs,
// errors, status or Redacted.
package config

import (
	"fmt"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/apikind"
)

// Strategy names.
const (
	StrategySticky     = "sticky"
	StrategyRoundRobin = "round-robin"
	StrategyFailover   = "failover"
)

// Channel api words: what a channel speaks. A word
// naming one wire API is that apikind.Kind's value; "openai" is Chat
// Completions and Responses.
const (
	APIAnthropic  = string(apikind.Anthropic) // Anthropic Messages
	APIOpenAI     = "openai"                  // OpenAI Chat Completions and Responses
	APIOpenAIChat = string(apikind.Chat)      // Chat Completions only (most OpenAI-compatible servers)
	APIGemini     = string(apikind.Gemini)    // Gemini generateContent
	// APIMixed is a pool's API when its members speak different APIs.
	APIMixed = "mixed"
)

// ChannelAPIs are the values a channel's api may take.
var ChannelAPIs = []string{APIAnthropic, APIOpenAI, APIOpenAIChat, APIGemini}

// Defaults.
const (
	DefaultSessionTTL         = 3600000 * time.Millisecond
	DefaultFirstOutputTimeout = 90000 * time.Millisecond
	// DefaultResponseTimeout bounds the wait for response headers of a
	// non-streaming call (the whole generation happens before them); it
	// matches the Anthropic SDK's 10 minute default.
	DefaultResponseTimeout = 600000 * time.Millisecond
	// DefaultStreamIdleTimeout bounds the silence between two upstream events
	// after the commit point, so our own pings cannot mask a dead upstream.
	DefaultStreamIdleTimeout = 300000 * time.Millisecond
	// DefaultKeepaliveHold is how long a streamed call may go without
	// visible output before the pool sends the response head and the API's
	// own keep-alives; agents give up on a silent socket.
	DefaultKeepaliveHold = 3000 * time.Millisecond
	// DefaultRateLimitWait is the longest rate limit of a session's bound
	// member that a streamed call waits out on that member, keep-alives
	// meanwhile, rather than moving the session.
	DefaultRateLimitWait = 10000 * time.Millisecond
)

// Config is the validated pool configuration: the real channels and the
// virtual pools built from them. Build it with ParseConfig or LoadConfig; the
// zero value is an empty configuration (no pools).
type Config struct {
	// Channels in file order.
	Channels []*Channel
	// Pools in file order.
	Pools []*PoolConfig
	// State is where bindings, cooldowns and counters live;
	// the zero value is memory.
	State StateConfig
}

// Channel is one real model endpoint: an entry of the file's channels:.
type Channel struct {
	ID string
	// API is one of ChannelAPIs.
	API string
	// BaseURL is the endpoint root without the "/v1/..." suffix, e.g.
	// "https://api.anthropic.com" (the pool appends "/v1/messages").
	BaseURL string
	// APIKeyEnv names the environment variable the key was read from ("" when
	// the key is given inline as api_key).
	APIKeyEnv string
	// AuthHeader is how the key is sent: "x-api-key" (Anthropic default),
	// "bearer" (Authorization: Bearer, the OpenAI default) or
	// "x-goog-api-key" (the Gemini default).
	AuthHeader string
	// Models are the capabilities the channel declares per model id; a model not
	// listed has unknown capabilities.
	Models []ModelSpec
	// CacheBreakpoints is CacheBreakpointsAuto ("" too) or
	// CacheBreakpointsOff: whether a call translated for this channel
	// (api anthropic) gets the pool's prompt-cache breakpoints as well as
	// the client's.
	CacheBreakpoints string

	// key is behind a pointer so fmt's %v/%+v of a Channel prints an address,
	// never the secret.
	key *secret
}

// Channel cache_breakpoints values.
const (
	CacheBreakpointsAuto = "auto" // the pool places breakpoints (the default)
	CacheBreakpointsOff  = "off"  // only the client's breakpoints are sent
)

// AutoCache reports whether calls translated for ch get the pool's
// prompt-cache breakpoints (SPEC POOL-24).
func (ch *Channel) AutoCache() bool { return ch.CacheBreakpoints != CacheBreakpointsOff }

// ModelSpec is what a channel declares about one of its model ids.
// Zero/empty fields are unknown.
type ModelSpec struct {
	ID            string
	ContextWindow int // tokens
	MaxTokens     int // tokens
	Input         []string
	Efforts       []string
}

// PoolConfig is one virtual provider: an entry of the file's pools:.
type PoolConfig struct {
	ID          string
	DisplayName string
	// Strategy is StrategySticky (default), StrategyRoundRobin or StrategyFailover.
	Strategy string
	// Members are channel ids, in the configured order (the failover and
	// rotation order).
	Members []string
	// API is the members' channel API when they all speak the same one,
	// else APIMixed.
	API string
	// Models are the unified models; empty means every model id is accepted
	// and sent unchanged to every member.
	Models []UnifiedModel
	// Cooldown holds the per-class base cooldowns, defaults filled in.
	Cooldown CooldownConfig
	// SessionTTL: a binding unused this long expires.
	SessionTTL time.Duration
	// FirstOutputTimeout: an attempt with no visible output after this long
	// fails with class "timeout".
	FirstOutputTimeout time.Duration
	// ResponseTimeout: wait for response headers of non-streaming calls.
	ResponseTimeout time.Duration
	// StreamIdleTimeout: silence allowed between events after the commit
	// point; 0 disables.
	StreamIdleTimeout time.Duration
	// KeepaliveHold: a streamed call with no visible output after this long
	// gets the response head (200) and keep-alive events while the pool
	// still fails over silently; 0 disables (nothing is sent
	// before the commit point).
	KeepaliveHold time.Duration
	// StreamUpstream: a non-streamed call to an Anthropic Messages or Chat
	// Completions member asks it for a stream and answers the client with the JSON
	// answer built from its events, so a gateway between the pool and the channel
	// that cuts idle connections sees bytes all along. Off by default: the built
	// answer carries what the pool's neutral form holds, not every field the
	// member's own JSON has.
	StreamUpstream bool
	// RateLimitWait: a streamed call whose bound member is rate-limited for
	// at most this long (its cooldown, or the Retry-After of its 429 in
	// this call) waits for it, keep-alives meanwhile, and is sent to it
	// again instead of moving the session; 0 disables.
	RateLimitWait time.Duration
}

// UnifiedModel is one model id a pool offers, mapped to a target id per
// member. Zero/empty capability fields mean "merge
// from the members".
type UnifiedModel struct {
	ID            string
	Name          string
	Targets       map[string]string // member → target model id (default: ID)
	ContextWindow int
	MaxTokens     int
	Input         []string
	Efforts       []string
	DefaultEffort string
	// EffortMap maps member → unified effort → that member's effort.
	EffortMap map[string]map[string]string
}

// CooldownConfig holds base cooldown lengths per failure class. YAML keys:
// auth_ms, quota_ms, rate_limit_ms, server_ms, timeout_ms, empty_ms,
// network_ms, model_not_found_ms.
type CooldownConfig struct {
	Auth, Quota, RateLimit, Server, Timeout, Empty, Network, ModelNotFound time.Duration
}

// DefaultCooldown is the cooldown of each failure class when the config
// sets none (SPEC POOL-10's table). RateLimit is used only when the
// upstream sends no Retry-After style header; Network (connect failure) and
// ModelNotFound (one member misconfigured) are our additions.
var DefaultCooldown = CooldownConfig{
	Auth: 600 * time.Second, Quota: 600 * time.Second, RateLimit: 60 * time.Second,
	Server: 30 * time.Second, Timeout: 30 * time.Second, Empty: 30 * time.Second,
	Network: 30 * time.Second, ModelNotFound: 600 * time.Second,
}

// LoadConfig reads and validates the YAML file at path (see ParseConfig).
// getenv resolves api_key_env; the package never reads the environment
// itself. Errors: the file cannot be read, or what ParseConfig returns
// with File set to path in every *ConfigError.
func LoadConfig(path string, getenv func(string) string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("pool config: %w", err)
	}
	cfg, err := ParseConfig(data, getenv)
	for _, e := range AllErrors(err) {
		e.File = path
	}
	return cfg, err
}

// Channel returns the channel with that id, or nil.
func (c *Config) Channel(id string) *Channel {
	for _, ch := range c.Channels {
		if ch.ID == id {
			return ch
		}
	}
	return nil
}

// PoolIDs are the pools' ids in file order (for messages that list the
// valid ones).
func (c *Config) PoolIDs() []string {
	ids := make([]string, 0, len(c.Pools))
	for _, p := range c.Pools {
		ids = append(ids, p.ID)
	}
	return ids
}

// ModelIDs are the pool's unified model ids in file order.
func (p *PoolConfig) ModelIDs() []string {
	ids := make([]string, 0, len(p.Models))
	for _, m := range p.Models {
		ids = append(ids, m.ID)
	}
	return ids
}

// Pool returns the pool with that id, or nil.
func (c *Config) Pool(id string) *PoolConfig {
	for _, p := range c.Pools {
		if p.ID == id {
			return p
		}
	}
	return nil
}

// Model returns the channel's declared spec for model id, or nil.
func (ch *Channel) Model(id string) *ModelSpec {
	for i := range ch.Models {
		if ch.Models[i].ID == id {
			return &ch.Models[i]
		}
	}
	return nil
}

// Model returns the pool's unified model with that id, or nil.
func (p *PoolConfig) Model(id string) *UnifiedModel {
	for i := range p.Models {
		if p.Models[i].ID == id {
			return &p.Models[i]
		}
	}
	return nil
}

// Target is the member's model id for unified model m (POOL-2; default m).
func (p *PoolConfig) Target(m *UnifiedModel, model, member string) string {
	if m != nil {
		if t, ok := m.Targets[member]; ok && t != "" {
			return t
		}
	}
	return model
}

// validate checks the cross references after decoding and
// returns every error it finds.
func (c *Config) validate() error {
	chans := map[string]*Channel{}
	for _, ch := range c.Channels {
		chans[ch.ID] = ch
	}
	pools := map[string]bool{}
	for _, p := range c.Pools {
		pools[p.ID] = true
	}
	var errs errList
	for _, p := range c.Pools {
		pp := "pools." + p.ID
		if _, dup := chans[p.ID]; dup {
			errs.add(cfgErr(pp, fmt.Sprintf("pool id %q equals a channel id; pick another name", p.ID)))
		}
		if len(p.Members) == 0 {
			errs.add(cfgErr(pp+".members", "a pool needs at least one member"))
		}
		seen := map[string]bool{}
		apis := map[string]bool{}
		for i, m := range p.Members {
			mp := fmt.Sprintf("%s.members[%d]", pp, i)
			ch := chans[m]
			switch {
			case pools[m]:
				errs.add(cfgErr(mp, fmt.Sprintf("%q is a pool; a pool cannot contain a pool", m)))
			case ch == nil:
				errs.add(cfgErr(mp, fmt.Sprintf("unknown channel %q", m)))
			case seen[m]:
				errs.add(cfgErr(mp, fmt.Sprintf("channel %q listed twice", m)))
			default:
				seen[m] = true
				apis[ch.API] = true
				if p.API == "" {
					p.API = ch.API
				}
			}
		}
		// Members may speak different APIs: calls are translated.
		if len(apis) > 1 {
			p.API = APIMixed
		}
		errs.add(p.validateModels(seen))
	}
	return errs.err()
}

// validateModels checks the pool's unified models against its members.
func (p *PoolConfig) validateModels(members map[string]bool) error {
	var errs errList
	ids := map[string]bool{}
	for i := range p.Models {
		m := &p.Models[i]
		mp := fmt.Sprintf("pools.%s.models[%d]", p.ID, i)
		if ids[m.ID] {
			errs.add(cfgErr(mp+".id", fmt.Sprintf("model %q defined twice", m.ID)))
		}
		ids[m.ID] = true
		for _, mem := range slices.Sorted(maps.Keys(m.Targets)) {
			if !members[mem] {
				errs.add(cfgErr(mp+".targets."+mem, "not a member of this pool"))
			}
		}
		for _, mem := range slices.Sorted(maps.Keys(m.EffortMap)) {
			if !members[mem] {
				errs.add(cfgErr(mp+".effort_map."+mem, "not a member of this pool"))
				continue
			}
			em := m.EffortMap[mem]
			for _, from := range slices.Sorted(maps.Keys(em)) {
				if to := em[from]; !validEffort(from) || !validEffort(to) {
					errs.add(cfgErr(mp+".effort_map."+mem+"."+from, fmt.Sprintf("unknown effort %q→%q (known: %s)", from, to, strings.Join(effortScale, ", "))))
				}
			}
		}
		if m.DefaultEffort != "" && len(m.Efforts) > 0 && !contains(m.Efforts, m.DefaultEffort) {
			errs.add(cfgErr(mp+".default_effort", fmt.Sprintf("%q is not in efforts", m.DefaultEffort)))
		}
	}
	return errs.err()
}

func validateBaseURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("base_url must be an absolute http:// or https:// URL")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("base_url must not have a query or fragment")
	}
	return nil
}

// effortScale is the one ordered reasoning-effort scale both APIs map onto
// (the Anthropic and OpenAI effort levels in one order, docs/POOL.md); "off" is accepted as an alias of "none".
var effortScale = []string{"off", "none", "minimal", "low", "medium", "high", "xhigh", "max"}

func validEffort(e string) bool { return contains(effortScale, e) }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
