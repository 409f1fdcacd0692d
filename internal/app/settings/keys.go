// Package settings is the live proxy configuration of a running instance:
// the settings that apply without rebinding the listener,
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
	"time"

	"github.com/xrash/smetrics"

	"github.com/dual-proxy/dual-proxy/proxy"
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
	// Group is the settings form's heading for the key, one of Groups
	// ("listener" for the fixed listener keys).
	Group string
	// Hint is the form's words for the key beside its field; "" shows
	// what 0 or the empty string means (Zero).
	Hint string
	// Live: the key applies to a running instance; the others (the
	// listener, the log format) are shown but need a restart.
	Live bool
	// Optional: the key may be not given at all, nil in Values and null
	// in the document, which is its default and means something else than
	// '' (upstream-url: not given, the first gateway is
	// upstream-host:upstream-port; '' means no first gateway).
	Optional bool
	// Default is the value when no source gives one (the standalone
	// proxy's); LauncherDefault the launchers' where it differs (nil:
	// the same). nil for an Optional key.
	Default, LauncherDefault any
	// Env is the environment variable of the flag.
	Env string
	// Help is the flag's usage line without the unit and the meaning of
	// 0 or '' (Usage adds them).
	Help string
	// Zero is what 0 (a number) or '' (a string, a list) means for the
	// key, the same from every source (docs/flags.md); "" when that
	// value is refused.
	Zero string
	// Secret: the value may hold a credential and is masked wherever it
	// is shown (mask.go).
	Secret bool
	// Proxy sets the key's checked value in the proxy.Config that runs
	// it (Resolved.ProxyConfig), keeping the key's meaning of 0 there
	// (toMS, toMSNone, toCount, toBool). nil for a key the proxy takes in
	// a resolved form instead: the candidates (upstream-*, gateway), the
	// rules (prefer-*), the parsed health URL, the log level (applied to
	// the loggers), or not at all (the listener, the log format).
	Proxy func(c *proxy.Config, x any)
}

// DefaultFor is k's default for a launcher (true) or the standalone
// proxy.
func (k Key) DefaultFor(launcher bool) any {
	if launcher && k.LauncherDefault != nil {
		return k.LauncherDefault
	}
	return k.Default
}

// ZeroValue is how 0 or ” is spelt for k's kind: "0" or "”".
func (k Key) ZeroValue() string {
	if k.Kind == KindMS || k.Kind == KindCount {
		return "0"
	}
	return "''"
}

// Usage is the flag's usage text: Help, the unit of a millisecond
// setting and the meaning of 0 or ” ("(ms, 0 = never)").
func (k Key) Usage() string {
	var notes []string
	if k.Kind == KindMS {
		notes = append(notes, "ms")
	}
	if k.Zero != "" {
		notes = append(notes, k.ZeroValue()+" = "+k.Zero)
	}
	if len(notes) == 0 {
		return k.Help
	}
	return k.Help + " (" + strings.Join(notes, ", ") + ")"
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
	{Name: ListenHost, Kind: KindString, Group: "listener", Default: "127.0.0.1", Env: "LISTEN_HOST",
		Help: "address to listen on (non-loopback logs a warning: open proxy)"},
	{Name: ListenPort, Kind: KindCount, Min: 0, Max: 65535, Group: "listener", Default: 7898, LauncherDefault: 7896, Env: "LISTEN_PORT",
		Help: "port to listen on", Zero: "any free port"},
	{Name: PortFallback, Kind: KindCount, Min: 0, Max: 1000, Group: "listener", Default: 0, LauncherDefault: 10, Env: "PORT_FALLBACK",
		Help: "when the port is busy, try this many following ports", Zero: "none"},
	{Name: TimeoutMS, Kind: KindMS, Min: 1, Max: MaxMS, Group: "timeouts", Live: true, Default: 5000, Env: "TIMEOUT_MS",
		Help:  "connect timeout per candidate",
		Proxy: toMS(func(c *proxy.Config) *time.Duration { return &c.ConnectTimeout })},
	{Name: ResponseTimeout, Kind: KindMS, Min: 1, Max: MaxMS, Group: "timeouts", Live: true, Default: 60000, Env: "RESPONSE_TIMEOUT_MS",
		Help:  "wait for response headers",
		Proxy: toMS(func(c *proxy.Config) *time.Duration { return &c.ResponseTimeout })},
	{Name: LogLevel, Kind: KindString, Group: "logging", Live: true, Default: "info", Env: "LOG_LEVEL",
		Help: "debug | info | warn | error"},
	{Name: LogFormat, Kind: KindString, Group: "logging", Default: "text", Env: "LOG_FORMAT",
		Help: "text | json"},
	{Name: HealthURL, Kind: KindString, Group: "health", Live: true, Default: "https://api.deepseek.com", Env: "HEALTH_URL",
		Help: "GET this URL through each candidate at start and every --health-interval-ms; the first whose origin answers (status < 500) is preferred. " +
			"The default is only a public model API that answers quickly (nothing else depends on it): give the endpoint your agent uses (e.g. https://api.openai.com)",
		Zero: "no check", Secret: true},
	{Name: FastFailMS, Kind: KindMS, Min: 1, Max: MaxMS, Group: "timeouts", Live: true, Default: 2000, Env: "FAST_FAIL_MS",
		Help:  "connect timeout when the first candidate comes from the cache or the health preference",
		Proxy: toMS(func(c *proxy.Config) *time.Duration { return &c.FastFail })},
	{Name: RaceDelayMS, Kind: KindMS, Min: 0, Max: MaxMS, Group: "timeouts", Live: true, Default: 250, Env: "RACE_DELAY_MS",
		Help: "start the next candidate in parallel when a path is not open after this long", Zero: "off",
		Proxy: toMS(func(c *proxy.Config) *time.Duration { return &c.RaceDelay })},
	{Name: TunnelIdleMS, Kind: KindMS, Min: 0, Max: MaxMS, Group: "timeouts", Live: true, Default: 3600000, Env: "TUNNEL_IDLE_TIMEOUT_MS",
		Help: "close a CONNECT tunnel with no byte either way for this long", Zero: "never",
		Proxy: toMSNone(func(c *proxy.Config) *time.Duration { return &c.TunnelIdleTimeout })},
	{Name: TunnelHalfMS, Kind: KindMS, Min: 0, Max: MaxMS, Group: "timeouts", Live: true, Default: 60000, Env: "TUNNEL_HALF_CLOSE_TIMEOUT_MS",
		Help: "close a tunnel one side of which has closed once the other is silent this long", Zero: "never",
		Proxy: toMSNone(func(c *proxy.Config) *time.Duration { return &c.TunnelHalfCloseTimeout })},
	{Name: HeadTimeoutMS, Kind: KindMS, Min: 1, Max: MaxMS, Group: "timeouts", Live: true, Default: 10000, Env: "HEAD_TIMEOUT_MS",
		Help:  "a request head must arrive within this long of the connection or of its first byte",
		Proxy: toMS(func(c *proxy.Config) *time.Duration { return &c.HeadTimeout })},
	{Name: PrefTTLMS, Kind: KindMS, Min: 0, Max: MaxMS, Group: "cooling", Live: true, Default: 60000, Env: "PREF_TTL_MS",
		Help: "how long a host remembers the candidate that served it", Zero: "no cache",
		Proxy: toMSNone(func(c *proxy.Config) *time.Duration { return &c.PrefTTL })},
	{Name: CooldownMS, Kind: KindMS, Min: 0, Max: MaxMS, Group: "cooling", Live: true, Default: 30000, Env: "COOLDOWN_MS",
		Help: "how long a failed candidate is tried last", Zero: "off",
		Proxy: toMS(func(c *proxy.Config) *time.Duration { return &c.Cooldown })},
	{Name: HealthInterval, Kind: KindMS, Min: 0, Max: MaxMS, Group: "health", Live: true, Default: 60000, Env: "HEALTH_INTERVAL_MS",
		Help: "health check period", Zero: "only after failures",
		Proxy: toMS(func(c *proxy.Config) *time.Duration { return &c.HealthInterval })},
	{Name: HealthRecover, Kind: KindCount, Min: 1, Max: 1 << 30, Group: "health", Live: true, Default: 2, Env: "HEALTH_RECOVER_COUNT",
		Help:  "passing checks a failed candidate needs to be preferred again",
		Proxy: toCount(func(c *proxy.Config) *int { return &c.HealthRecoverCount })},
	{Name: PreferDirect, Kind: KindList, Group: "rules", Live: true, Default: []string{}, Env: "PREFER_DIRECT",
		Hint: "hosts that go direct first, comma-separated",
		Help: "host patterns that try direct first (*.example.com, comma-separated)", Zero: "none"},
	{Name: PreferProxy, Kind: KindList, Group: "rules", Live: true, Default: []string{}, Env: "PREFER_PROXY",
		Hint: "hosts that go through a gateway first, comma-separated",
		Help: "host patterns that try direct last", Zero: "none"},
	{Name: UpstreamPort, Kind: KindCount, Min: 1, Max: 65535, Group: "path", Live: true, Default: 7897, Env: "UPSTREAM_PORT",
		Help: "first gateway port"},
	{Name: Gateway, Kind: KindList, Group: "path", Live: true, Default: []string{}, Env: "GATEWAY",
		Hint: "tried in this order; the first that works serves",
		Help: "extra gateway host:port or http://, https://, socks5://, socks5h:// URL (repeatable; env comma-separated)", Zero: "none", Secret: true},
	{Name: UpstreamURL, Kind: KindString, Group: "path", Live: true, Optional: true, Env: "UPSTREAM_URL",
		Hint: "the first gateway, as a URL; empty the field for none (when not set: upstream-host and upstream-port)",
		Help: "first gateway as http://, https://, socks5:// or socks5h://[user:pass@]host:port (https: /?ca=FILE; overrides --upstream-host/--upstream-port)",
		Zero: "no first gateway", Secret: true},
	{Name: UpstreamHost, Kind: KindString, Group: "path", Live: true, Default: "127.0.0.1", Env: "UPSTREAM_HOST",
		Hint: "the first gateway's host when upstream-url is not set; empty the field for none",
		Help: "first gateway host when --upstream-url is not given", Zero: "no first gateway", Secret: true},
	{Name: LoopbackDirect, Kind: KindBool, Group: "path", Live: true, Default: true, Env: "LOOPBACK_DIRECT",
		Help:  "dial loopback destinations direct, never through a gateway",
		Proxy: toBool(func(c *proxy.Config) *bool { return &c.LoopbackDirect })},
	{Name: VerifyTLS, Kind: KindBool, Group: "tls", Live: true, Default: true, Env: "VERIFY_TLS",
		Hint:  "probe TLS through a new path before it is used",
		Help:  "TLS-probe port 443 paths before opening a tunnel on a cache miss",
		Proxy: toBool(func(c *proxy.Config) *bool { return &c.TLSProbe })},
	{Name: RetryAfterSend, Kind: KindBool, Group: "replay", Live: true, Default: false, Env: "RETRY_NON_IDEMPOTENT_AFTER_SEND",
		Hint:  "replay a POST whose request was already sent",
		Help:  "replay POST/PATCH even after they may have reached the origin",
		Proxy: toBool(func(c *proxy.Config) *bool { return &c.RetryNonIdempotentAfterSend })},
	{Name: RetryWithKey, Kind: KindBool, Group: "replay", Live: true, Default: false, Env: "RETRY_NON_IDEMPOTENT_WITH_IDEMPOTENCY_KEY",
		Hint:  "replay a POST that carries an Idempotency-Key",
		Help:  "replay non-idempotent requests that carry Idempotency-Key / X-Idempotency-Key",
		Proxy: toBool(func(c *proxy.Config) *bool { return &c.RetryWithIdempotencyKey })},
}

// Group is one heading of the settings form: Name as Key.Group spells
// it, Title as the form shows it.
type Group struct {
	Name  string `json:"name"`
	Title string `json:"title"`
}

// Groups are the headings of the settings form in the page's order; the
// live keys of each follow in Keys order (the document's keys).
var Groups = []Group{
	{"path", "Gateways and upstream"},
	{"rules", "Direct or gateway by host"},
	{"health", "Health check"},
	{"timeouts", "Timeouts, fast-fail, race delay"},
	{"cooling", "Cooldown and preference"},
	{"tls", "TLS"},
	{"replay", "Replay"},
	{"logging", "Logging"},
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
