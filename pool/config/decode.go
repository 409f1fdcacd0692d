package config

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// ParseConfig decodes and validates YAML of this shape:
//
//	channels:
//	  ID: {api: anthropic|openai|openai-chat|gemini, base_url: URL, api_key_env: VAR | api_key: KEY,
//	       auth: x-api-key|bearer|x-goog-api-key, models: [{id, context_window, max_tokens, input, efforts}],
//	       cache_breakpoints: auto|off (api anthropic only)}
//	pools:
//	  ID: {display_name, strategy: sticky|round-robin|failover, members: [ID…],
//	       models: [{id, name, targets: {member: id}, context_window, max_tokens,
//	                 input, efforts, default_effort, effort_map: {member: {from: to}}}],
//	       cooldown: {auth_ms, quota_ms, rate_limit_ms, server_ms, timeout_ms,
//	                  empty_ms, network_ms, model_not_found_ms},
//	       session_ttl_ms, first_output_timeout_ms, response_timeout_ms,
//	       stream_idle_timeout_ms, keepalive_hold_ms, stream_upstream,
//	       rate_limit_wait_ms}
//	state: memory | redis://… | {url, name, timeout_ms}   (StateConfig)
//	proxy: {…}   the proxy's settings, read by internal/app/settings
//
// The document is walked as a yaml.Node tree so every error is a
// *ConfigError naming its YAML path, e.g. `pools.ustc-pool.members[2]:
// unknown channel "x"` (POOL-3), and the line and column of that key or
// item. An unknown key anywhere, top level included, is an error naming
// its path and the key it probably meant (strict.go); a duplicate key is
// one at the second key. api_key_env is resolved with getenv and wins over
// api_key. Error messages name the variable, never its value.
//
// Decoding goes on past an error: the error is every problem found, in
// file order — one *ConfigError, or ConfigErrors when there are several
// (errors.go; AllErrors lists either).
func ParseConfig(data []byte, getenv func(string) string) (*Config, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, YAMLError(err, data)
	}
	cfg := &Config{}
	if len(doc.Content) == 0 {
		return cfg, nil
	}
	var errs errList
	errs.add(eachKey(doc.Content[0], "", func(k string, v *yaml.Node, p string) error {
		switch k {
		case "channels":
			return eachKey(v, p, func(id string, cv *yaml.Node, cp string) error {
				ch, err := decodeChannel(id, cv, cp, getenv)
				cfg.Channels = append(cfg.Channels, ch)
				var l errList
				l.add(idErr(id, cp))
				l.add(err)
				return l.err()
			})
		case "pools":
			return eachKey(v, p, func(id string, pv *yaml.Node, pp string) error {
				pc, err := decodePool(id, pv, pp)
				cfg.Pools = append(cfg.Pools, pc)
				var l errList
				l.add(idErr(id, pp))
				l.add(err)
				return l.err()
			})
		case "state":
			var err error
			cfg.State, err = decodeState(v, p)
			return err
		case "proxy":
			return nil // the proxy's live settings: internal/app/settings reads them
		}
		return unknownTopKey(k)
	}))
	// Cross references are checked even when a key was bad, but an error
	// there is not repeated by a check of the same path.
	var refs errList
	refs.add(cfg.validate())
	for _, e := range refs {
		if !errs.covers(e.Path) {
			errs = append(errs, e)
		}
	}
	if len(errs) > 0 {
		return nil, errs.located(doc.Content[0]).err()
	}
	return cfg, nil
}

// decodeChannel decodes the channel id at YAML path p: its
// keys, then what is missing (api, base_url), the default auth header of
// its api, and its key (resolveChannelKey). Errors are *ConfigErrors; the
// channel is returned with what was decoded either way.
func decodeChannel(id string, n *yaml.Node, p string, getenv func(string) string) (*Channel, error) {
	ch := &Channel{ID: id}
	var inline string
	var errs errList
	errs.add(eachKey(n, p, func(k string, v *yaml.Node, kp string) error {
		return decodeChannelKey(ch, &inline, k, v, kp)
	}))
	if ch.API == "" && !errs.covers(p+".api") {
		errs.add(cfgErr(p+".api", "missing ("+strings.Join(ChannelAPIs, ", ")+")"))
	}
	if ch.BaseURL == "" && !errs.covers(p+".base_url") {
		errs.add(cfgErr(p+".base_url", "missing"))
	}
	if ch.AuthHeader == "" {
		ch.AuthHeader = defaultAuth(ch.API)
	}
	if ch.CacheBreakpoints != "" && ch.API != "" && ch.API != APIAnthropic && !errs.covers(p+".cache_breakpoints") {
		// Only the Messages API takes breakpoints; the others cache by themselves.
		errs.add(cfgErr(p+".cache_breakpoints", "only for api anthropic (the other APIs cache prefixes without breakpoints)"))
	}
	resolveChannelKey(ch, inline, p, getenv, &errs)
	return ch, errs.err()
}

// decodeChannelKey decodes the channel key k (at YAML path kp) into ch, an
// api_key into *inline (an unknown api or auth names the
// choices, an unknown key the key it probably meant; an error never shows
// a key's value).
func decodeChannelKey(ch *Channel, inline *string, k string, v *yaml.Node, kp string) error {
	var err error
	switch k {
	case "api":
		if ch.API, err = scalar(v, kp); err == nil {
			err = checkChannelAPI(ch.API, kp)
		}
	case "base_url":
		ch.BaseURL, err = scalar(v, kp)
		if err == nil {
			if e := validateBaseURL(ch.BaseURL); e != nil {
				err = cfgErr(kp, e.Error())
			}
		}
	case "api_key_env":
		ch.APIKeyEnv, err = scalar(v, kp)
		if err == nil && !envName(ch.APIKeyEnv) {
			err = cfgErr(kp, "is not a valid environment variable name (letters, digits, _; a key itself belongs in the environment or in api_key)")
		}
	case "api_key":
		*inline, err = scalar(v, kp)
	case "auth":
		ch.AuthHeader, err = scalar(v, kp)
		if err == nil && ch.AuthHeader != "x-api-key" && ch.AuthHeader != "bearer" && ch.AuthHeader != "x-goog-api-key" {
			err = cfgErr(kp, fmt.Sprintf("unknown auth %s (x-api-key, bearer or x-goog-api-key)", quoteSafe(ch.AuthHeader)))
		}
	case "models":
		err = eachItem(v, kp, func(v *yaml.Node, ip string) error {
			ms, err := decodeModelSpec(v, ip)
			ch.Models = append(ch.Models, ms)
			return err
		})
	case "cache_breakpoints":
		ch.CacheBreakpoints, err = scalar(v, kp)
		if err == nil && ch.CacheBreakpoints != CacheBreakpointsAuto && ch.CacheBreakpoints != CacheBreakpointsOff {
			err = cfgErr(kp, fmt.Sprintf("unknown value %s (auto or off)", quoteSafe(ch.CacheBreakpoints)))
		}
	default:
		err = unknownKey(kp, k, channelKeys)
	}
	return err
}

// checkChannelAPI refuses an api not in ChannelAPIs, naming
// the nearest one when there is one and the value may be shown, else the
// list.
func checkChannelAPI(api, kp string) error {
	if slices.Contains(ChannelAPIs, api) {
		return nil
	}
	shown := quoteSafe(api)
	if best, ok := nearest(api, ChannelAPIs); ok && shown != hiddenValue {
		return cfgErr(kp, fmt.Sprintf("unknown api %s (did you mean %s?)", shown, best))
	}
	return cfgErr(kp, fmt.Sprintf("unknown api %s (%s)", shown, strings.Join(ChannelAPIs, ", ")))
}

// defaultAuth is the key header of an api whose channel names no auth:
// bearer for OpenAI's, x-goog-api-key for Gemini, else x-api-key.
func defaultAuth(api string) string {
	switch api {
	case APIOpenAI, APIOpenAIChat:
		return "bearer"
	case APIGemini:
		return "x-goog-api-key"
	}
	return "x-api-key"
}

// resolveChannelKey sets ch's key: the variable api_key_env names (getenv) wins
// over the inline api_key. Without a key it adds the error at p, naming the
// variable but never a value that looks like a key itself, unless an error at
// either key already covers it.
func resolveChannelKey(ch *Channel, inline, p string, getenv func(string) string, errs *errList) {
	key := ""
	if ch.APIKeyEnv != "" {
		key = getenv(ch.APIKeyEnv)
	}
	if key == "" {
		key = inline
	}
	switch {
	case key != "":
		ch.key = &secret{v: key, inline: inline != ""}
	case errs.covers(p + ".api_key_env"), errs.covers(p + ".api_key"):
	case ch.APIKeyEnv != "" && looksSecret(ch.APIKeyEnv):
		errs.add(cfgErr(p+".api_key_env", "the environment variable it names is empty or unset"))
	case ch.APIKeyEnv != "":
		errs.add(cfgErr(p+".api_key_env", fmt.Sprintf("environment variable %s is empty or unset", ch.APIKeyEnv)))
	default:
		errs.add(cfgErr(p, "no key: set api_key_env (preferred) or api_key"))
	}
}

func decodeModelSpec(n *yaml.Node, p string) (ModelSpec, error) {
	var m ModelSpec
	common := modelFields{&m.ID, &m.ContextWindow, &m.MaxTokens, &m.Input, &m.Efforts}
	err := eachKey(n, p, func(k string, v *yaml.Node, kp string) error {
		if ok, err := common.decode(k, v, kp); ok {
			return err
		}
		return unknownKey(kp, k, modelKeys)
	})
	if m.ID == "" {
		err = missingID(err, p)
	} else if !validUpstreamModelID(m.ID) {
		err = also(err, cfgErr(p+".id", upstreamModelHint))
	}
	return m, err
}

// modelFields points at the fields a channel's model (ModelSpec) and a
// pool's unified model (UnifiedModel) share: id, context_window,
// max_tokens, input and efforts.
type modelFields struct {
	id                       *string
	contextWindow, maxTokens *int
	input, efforts           *[]string
}

// decode sets the shared field that key k names from v (kp is its path for
// errors); ok is false when k is not one of them.
func (f modelFields) decode(k string, v *yaml.Node, kp string) (ok bool, err error) {
	switch k {
	case "id":
		*f.id, err = scalar(v, kp)
	case "context_window":
		*f.contextWindow, err = posInt(v, kp)
	case "max_tokens":
		*f.maxTokens, err = posInt(v, kp)
	case "input":
		*f.input, err = inputList(v, kp)
	case "efforts":
		*f.efforts, err = effortList(v, kp)
	default:
		return false, nil
	}
	return true, err
}

func decodePool(id string, n *yaml.Node, p string) (*PoolConfig, error) {
	pc := &PoolConfig{ID: id, Strategy: StrategySticky, Cooldown: DefaultCooldown,
		SessionTTL: DefaultSessionTTL, FirstOutputTimeout: DefaultFirstOutputTimeout,
		ResponseTimeout: DefaultResponseTimeout, StreamIdleTimeout: DefaultStreamIdleTimeout,
		KeepaliveHold: DefaultKeepaliveHold, RateLimitWait: DefaultRateLimitWait}
	err := eachKey(n, p, func(k string, v *yaml.Node, kp string) error {
		var err error
		switch k {
		case "display_name":
			pc.DisplayName, err = scalar(v, kp)
		case "strategy":
			pc.Strategy, err = scalar(v, kp)
			if err == nil && pc.Strategy != StrategySticky && pc.Strategy != StrategyRoundRobin && pc.Strategy != StrategyFailover {
				err = cfgErr(kp, fmt.Sprintf("unknown strategy %q (sticky, round-robin or failover)", pc.Strategy))
			}
		case "members":
			pc.Members, err = stringList(v, kp)
		case "models":
			err = eachItem(v, kp, func(v *yaml.Node, ip string) error {
				m, err := decodeUnified(v, ip)
				pc.Models = append(pc.Models, m)
				return err
			})
		case "cooldown":
			err = decodeCooldown(v, kp, &pc.Cooldown)
		case "session_ttl_ms":
			pc.SessionTTL, err = millis(v, kp, false)
		case "first_output_timeout_ms":
			pc.FirstOutputTimeout, err = millis(v, kp, false)
		case "response_timeout_ms":
			pc.ResponseTimeout, err = millis(v, kp, false)
		case "stream_idle_timeout_ms":
			pc.StreamIdleTimeout, err = millis(v, kp, true)
		case "keepalive_hold_ms":
			pc.KeepaliveHold, err = millis(v, kp, true)
		case "stream_upstream":
			pc.StreamUpstream, err = boolean(v, kp)
		case "rate_limit_wait_ms":
			pc.RateLimitWait, err = millis(v, kp, true)
		default:
			err = unknownKey(kp, k, poolKeys)
		}
		return err
	})
	if pc.DisplayName == "" {
		pc.DisplayName = id
	}
	return pc, err
}

func decodeUnified(n *yaml.Node, p string) (UnifiedModel, error) {
	var m UnifiedModel
	common := modelFields{&m.ID, &m.ContextWindow, &m.MaxTokens, &m.Input, &m.Efforts}
	err := eachKey(n, p, func(k string, v *yaml.Node, kp string) error {
		if ok, err := common.decode(k, v, kp); ok {
			return err
		}
		var err error
		switch k {
		case "name":
			m.Name, err = scalar(v, kp)
		case "targets":
			m.Targets = map[string]string{}
			err = eachKey(v, kp, func(mem string, tv *yaml.Node, tp string) error {
				t, err := scalar(tv, tp)
				m.Targets[mem] = t
				return err
			})
		case "default_effort":
			m.DefaultEffort, err = scalar(v, kp)
		case "effort_map":
			m.EffortMap = map[string]map[string]string{}
			err = eachKey(v, kp, func(mem string, mv *yaml.Node, mp string) error {
				em := map[string]string{}
				m.EffortMap[mem] = em
				return eachKey(mv, mp, func(from string, tv *yaml.Node, tp string) error {
					to, err := scalar(tv, tp)
					em[from] = to
					return err
				})
			})
		default:
			err = unknownKey(kp, k, unifiedKeys)
		}
		return err
	})
	if m.ID == "" {
		err = missingID(err, p)
	} else {
		err = also(err, idErr(m.ID, p+".id"))
	}
	if m.Name == "" {
		m.Name = m.ID
	}
	return m, err
}

func decodeCooldown(n *yaml.Node, p string, c *CooldownConfig) error {
	fields := map[string]*time.Duration{
		"auth_ms": &c.Auth, "quota_ms": &c.Quota, "rate_limit_ms": &c.RateLimit,
		"server_ms": &c.Server, "timeout_ms": &c.Timeout, "empty_ms": &c.Empty,
		"network_ms": &c.Network, "model_not_found_ms": &c.ModelNotFound,
	}
	return eachKey(n, p, func(k string, v *yaml.Node, kp string) error {
		f, ok := fields[k]
		if !ok {
			return unknownKey(kp, k, cooldownKeys)
		}
		d, err := millis(v, kp, true)
		*f = d
		return err
	})
}

// missingID adds "missing" at p.id to err, the errors of the model item at
// p, unless one of them is about the id already.
func missingID(err error, p string) error {
	var errs errList
	errs.add(err)
	if !errs.covers(p + ".id") {
		errs.add(cfgErr(p+".id", "missing"))
	}
	return errs.err()
}

// also is err with e added (either may be nil), unless an error of err is
// about e's path already.
func also(err, e error) error {
	var errs errList
	errs.add(err)
	if ce, ok := e.(*ConfigError); ok && !errs.covers(ce.Path) {
		errs.add(e)
	}
	return errs.err()
}
