package config

import (
	"fmt"
	"strings"

	"github.com/xrash/smetrics"
)

// Config typos are errors: every mapping of the file has a known
// set of keys, and an unknown key is a *ConfigError naming its path and the
// key it probably meant.

// The keys each mapping accepts, as decode.go's switches do.
var (
	// topKeys are every section of the file: the pool's and the proxy's
	// live settings (internal/app/settings reads proxy:).
	topKeys      = []string{"channels", "pools", "proxy", "state"}
	channelKeys  = []string{"api", "base_url", "api_key_env", "api_key", "auth", "models", "cache_breakpoints"}
	modelKeys    = []string{"id", "context_window", "max_tokens", "input", "efforts"}
	poolKeys     = []string{"display_name", "strategy", "members", "models", "cooldown", "session_ttl_ms", "first_output_timeout_ms", "response_timeout_ms", "stream_idle_timeout_ms", "keepalive_hold_ms", "stream_upstream", "rate_limit_wait_ms"}
	unifiedKeys  = []string{"id", "name", "targets", "context_window", "max_tokens", "input", "efforts", "default_effort", "effort_map"}
	cooldownKeys = []string{"auth_ms", "quota_ms", "rate_limit_ms", "server_ms", "timeout_ms", "empty_ms", "network_ms", "model_not_found_ms"}
)

// unknownKey is the error for key at path (path ends in key): "unknown
// key (did you mean models?)" when a known key is within two edits, else
// the known keys.
func unknownKey(path, key string, known []string) *ConfigError {
	if best, ok := nearest(key, known); ok {
		return cfgErr(path, fmt.Sprintf("unknown key (did you mean %s?)", best))
	}
	return cfgErr(path, "unknown key (known: "+strings.Join(known, ", ")+")")
}

// unknownTopKey is the error for a top-level key: the file's sections
// are few, so it lists them all, after "did you mean" when one is near
// ("stat:" → "did you mean state? sections: channels, pools, proxy,
// state").
func unknownTopKey(key string) *ConfigError {
	list := "sections: " + strings.Join(topKeys, ", ")
	if best, ok := nearest(key, topKeys); ok {
		return cfgErr(key, fmt.Sprintf("unknown key (did you mean %s? %s)", best, list))
	}
	return cfgErr(key, "unknown key ("+list+")")
}

// nearest is the word of known closest to s, and whether it is close
// enough to suggest: within two edits, and at most half of s changed.
func nearest(s string, known []string) (string, bool) {
	best, bestD := "", 1<<30
	for _, k := range known {
		if d := smetrics.WagnerFischer(s, k, 1, 1, 1); d < bestD {
			best, bestD = k, d
		}
	}
	return best, bestD <= 2 && bestD*2 <= len(s)
}
