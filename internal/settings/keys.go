// Package settings is the live proxy configuration of a running instance
// (SPEC OPS-7): the settings that apply without rebinding the listener,
// keyed by their long flag names as --print-config shows them, each with
// its type, bounds and source (default, flag, env, file, API); validation
// that names every bad field; the versioned GET/PUT document of
// /_dual-proxy/settings; and the config file's proxy: section.
//
// The same checks serve the command line at start, a PUT, the CLI's
// `dual-proxy settings set` and a reload of the file, so no source can
// set what another would refuse.
package settings

import (
	"fmt"
	"slices"
	"strings"

	"github.com/xrash/smetrics"
)

// Kind is a setting's value type, and how it reads from text, JSON and
// YAML.
type Kind int

// The kinds of Keys.
const (
	// KindMS is a duration in whole milliseconds (int; JSON number).
	KindMS Kind = iota
	// KindCount is a whole number (int; JSON number).
	KindCount
	// KindBool is true or false (bool).
	KindBool
	// KindString is one string (string).
	KindString
	// KindList is an ordered list of strings ([]string; JSON array; as
	// text, comma-separated like the flag's environment variable).
	KindList
)

// Key describes one setting.
type Key struct {
	// Name is the long flag name ("cooldown-ms").
	Name string
	Kind Kind
	// Min and Max bound KindMS and KindCount values, inclusive.
	Min, Max int
	// Group is the status page's heading for the key: path, selection,
	// health, timeouts, replay or logging.
	Group string
	// Live: the key applies to a running instance; the others (the
	// listener, the log format) are shown but need a restart.
	Live bool
	// Optional: the key may be not given at all, nil in Values and null
	// in the document, which is its default and means something else than
	// '' (upstream-url: not given, the first gateway is
	// upstream-host:upstream-port; '' means no first gateway).
	Optional bool
}

// MaxMS bounds every millisecond setting (one week), far below the
// time.Duration overflow.
const MaxMS = 7 * 24 * 3600 * 1000

// Key names (the long flag names).
const (
	ListenHost      = "listen-host"
	ListenPort      = "listen-port"
	PortFallback    = "port-fallback"
	TimeoutMS       = "timeout-ms"
	ResponseTimeout = "response-timeout-ms"
	LogLevel        = "log-level"
	LogFormat       = "log-format"
	HealthURL       = "health-url"
	FastFailMS      = "fast-fail-ms"
	RaceDelayMS     = "race-delay-ms"
	TunnelIdleMS    = "tunnel-idle-timeout-ms"
	TunnelHalfMS    = "tunnel-half-close-timeout-ms"
	HeadTimeoutMS   = "head-timeout-ms"
	PrefTTLMS       = "pref-ttl-ms"
	CooldownMS      = "cooldown-ms"
	HealthInterval  = "health-interval-ms"
	HealthRecover   = "health-recover-count"
	PreferDirect    = "prefer-direct"
	PreferProxy     = "prefer-proxy"
	UpstreamPort    = "upstream-port"
	Gateway         = "gateway"
	UpstreamURL     = "upstream-url"
	UpstreamHost    = "upstream-host"
	LoopbackDirect  = "loopback-direct"
	VerifyTLS       = "verify-tls"
	RetryAfterSend  = "retry-non-idempotent-after-send"
	RetryWithKey    = "retry-non-idempotent-with-idempotency-key"
)

// Keys are every setting, in the order the command line reports the first
// error of several (so a start and a PUT name the same field first).
var Keys = []Key{
	{Name: ListenHost, Kind: KindString, Group: "listener"},
	{Name: ListenPort, Kind: KindCount, Min: 0, Max: 65535, Group: "listener"},
	{Name: PortFallback, Kind: KindCount, Min: 0, Max: 1000, Group: "listener"},
	{Name: TimeoutMS, Kind: KindMS, Min: 1, Max: MaxMS, Group: "timeouts", Live: true},
	{Name: ResponseTimeout, Kind: KindMS, Min: 1, Max: MaxMS, Group: "timeouts", Live: true},
	{Name: LogLevel, Kind: KindString, Group: "logging", Live: true},
	{Name: LogFormat, Kind: KindString, Group: "logging"},
	{Name: HealthURL, Kind: KindString, Group: "health", Live: true},
	{Name: FastFailMS, Kind: KindMS, Min: 1, Max: MaxMS, Group: "selection", Live: true},
	{Name: RaceDelayMS, Kind: KindMS, Min: 0, Max: MaxMS, Group: "selection", Live: true},
	{Name: TunnelIdleMS, Kind: KindMS, Min: 0, Max: MaxMS, Group: "timeouts", Live: true},
	{Name: TunnelHalfMS, Kind: KindMS, Min: 0, Max: MaxMS, Group: "timeouts", Live: true},
	{Name: HeadTimeoutMS, Kind: KindMS, Min: 1, Max: MaxMS, Group: "timeouts", Live: true},
	{Name: PrefTTLMS, Kind: KindMS, Min: 0, Max: MaxMS, Group: "selection", Live: true},
	{Name: CooldownMS, Kind: KindMS, Min: 0, Max: MaxMS, Group: "selection", Live: true},
	{Name: HealthInterval, Kind: KindMS, Min: 0, Max: MaxMS, Group: "health", Live: true},
	{Name: HealthRecover, Kind: KindCount, Min: 1, Max: 1 << 30, Group: "health", Live: true},
	{Name: PreferDirect, Kind: KindList, Group: "selection", Live: true},
	{Name: PreferProxy, Kind: KindList, Group: "selection", Live: true},
	{Name: UpstreamPort, Kind: KindCount, Min: 1, Max: 65535, Group: "path", Live: true},
	{Name: Gateway, Kind: KindList, Group: "path", Live: true},
	{Name: UpstreamURL, Kind: KindString, Group: "path", Live: true, Optional: true},
	{Name: UpstreamHost, Kind: KindString, Group: "path", Live: true},
	{Name: LoopbackDirect, Kind: KindBool, Group: "path", Live: true},
	{Name: VerifyTLS, Kind: KindBool, Group: "selection", Live: true},
	{Name: RetryAfterSend, Kind: KindBool, Group: "replay", Live: true},
	{Name: RetryWithKey, Kind: KindBool, Group: "replay", Live: true},
}

// Lookup returns the key named name.
func Lookup(name string) (Key, bool) {
	i := slices.IndexFunc(Keys, func(k Key) bool { return k.Name == name })
	if i < 0 {
		return Key{}, false
	}
	return Keys[i], true
}

// LiveNames are the names of the live keys, in Keys order.
func LiveNames() []string {
	var out []string
	for _, k := range Keys {
		if k.Live {
			out = append(out, k.Name)
		}
	}
	return out
}

// unknownKey is the message for a name that is no setting: the live key
// within two edits of it, else all of them.
func unknownKey(name string) string {
	best, bestD := "", 1<<30
	for _, k := range LiveNames() {
		if d := smetrics.WagnerFischer(name, k, 1, 1, 1); d < bestD {
			best, bestD = k, d
		}
	}
	if bestD <= 3 || strings.HasPrefix(best, name) {
		return fmt.Sprintf("unknown setting %q (did you mean %s?)", name, best)
	}
	return fmt.Sprintf("unknown setting %q (settings: %s)", name, strings.Join(LiveNames(), ", "))
}
