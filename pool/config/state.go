package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// State kinds.
const (
	StateMemory = "memory"
)

// DefaultStateTimeout bounds every call to a shared state store: past it the
// instance answers from its local state.
const DefaultStateTimeout = 100 * time.Millisecond

// StateConfig is where the pool keeps its state (the top-level `state:` key,
// SPEC POOL-23): a scalar ("memory", or a Redis URL) or a mapping
//
//	state: {url: redis://[user:pass@]host:port/db, name: team-a, timeout_ms: 100}
//
// rediss:// is Redis over TLS; Valkey speaks the same protocol.
type StateConfig struct {
	// URL is "" or "memory" (in-process state), else a redis:// or rediss://
	// URL, which may hold a password: print it only through RedactStateURL.
	URL string
	// Name namespaces the keys in the store; "" → a hash of the pool ids and
	// their members (StatePrefix), so instances with the same pools share.
	Name string
	// Timeout bounds every state call; 0 → DefaultStateTimeout.
	Timeout time.Duration
}

// Shared reports whether the state lives in a shared store.
func (s StateConfig) Shared() bool { return s.URL != "" && s.URL != StateMemory }

// validStateName reports whether name is 1-64 letters, digits, '.', '_' or
// '-' (a key namespace: no ':' or spaces in Redis keys). Not a regexp: the
// `{1,64}` repetition compiled at package init cost every start of the
// program 860 allocations and 60 KB of heap.
func validStateName(name string) bool { return validIn(name, maxID, "") }

// decodeState reads the `state:` key.
func decodeState(n *yaml.Node, p string) (StateConfig, error) {
	var sc StateConfig
	if m := deref(n); m.Kind == yaml.ScalarNode {
		u, err := scalar(m, p)
		sc.URL = u
		if err == nil {
			err = checkStateURL(u, p)
		}
		return sc, err
	}
	err := eachKey(n, p, func(k string, v *yaml.Node, kp string) error {
		var err error
		switch k {
		case "url":
			if sc.URL, err = scalar(v, kp); err == nil {
				err = checkStateURL(sc.URL, kp)
			}
		case "name":
			if sc.Name, err = scalar(v, kp); err == nil && !validStateName(sc.Name) {
				err = cfgErr(kp, "must be 1-64 letters, digits, '.', '_' or '-'")
			}
		case "timeout_ms":
			sc.Timeout, err = millis(v, kp, false)
		default:
			err = cfgErr(kp, "unknown key (url, name, timeout_ms)")
		}
		return err
	})
	return sc, err
}

// CheckStateURL validates a state value from the config, a flag or the
// environment: "memory", or redis://[user:pass@]host:port[/db] or rediss://…,
// the port 1-65535 when given. The error never repeats the value (it may
// hold a password).
func CheckStateURL(raw string) error {
	if err := checkStateURL(raw, ""); err != nil {
		return fmt.Errorf("%s", err.(*ConfigError).Msg)
	}
	return nil
}

func checkStateURL(raw, p string) error {
	if raw == "" || raw == StateMemory {
		return nil
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return cfgErr(p, "not a URL (memory, redis://[user:pass@]host:port/db or rediss://…)")
	case u.Scheme != "redis" && u.Scheme != "rediss":
		return cfgErr(p, fmt.Sprintf("unknown state %s (memory, redis://… or rediss://…)", quoteSafe(u.Scheme+"://")))
	case u.Host == "":
		return cfgErr(p, "redis URL without host:port")
	}
	if port := u.Port(); port != "" {
		// url.Parse takes any digits; a dial would fail only at the
		// first pool call, far from the typo.
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return cfgErr(p, "redis port must be 1-65535, got "+port)
		}
	}
	if db := strings.Trim(u.Path, "/"); db != "" {
		if n, err := strconv.Atoi(db); err != nil || n < 0 {
			return cfgErr(p, "redis database must be a number (redis://host:port/0)")
		}
	}
	return nil
}

// RedactStateURL returns a state URL with its password replaced by "***"
// (like gateway credentials): redis://user:***@host:6379/0.
func RedactStateURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if strings.Contains(raw, "@") {
			return "(unparsable, hidden)"
		}
		return raw
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "***")
		}
	}
	return strings.Replace(u.String(), ":%2A%2A%2A@", ":***@", 1)
}

// StatePrefix is the key namespace of cfg in a shared store:
// "dp:NAME:" with the configured name, else "dp:" and 12 hex digits of a
// SHA-256 over the pool ids and their members, so instances configured with
// the same pools share one state and others do not mix with it.
func StatePrefix(cfg *Config) string {
	if cfg.State.Name != "" {
		return "dp:" + cfg.State.Name + ":"
	}
	var parts []string
	for _, pc := range cfg.Pools {
		parts = append(parts, pc.ID+"="+strings.Join(pc.Members, ","))
	}
	sort.Strings(parts)
	sum := sha256.Sum256([]byte(strings.Join(parts, "\n")))
	return "dp:" + hex.EncodeToString(sum[:6]) + ":"
}
