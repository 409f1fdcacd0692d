package engine

import (
	"crypto/tls"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/route"
)

// Config is the proxy's resolved configuration. cmd/ builds it from flags,
// environment and defaults and validates it. The zero value of each field
// is documented; New fills the SPEC defaults where it says so.
type Config struct {
	// Candidates in default order, direct last, as built by
	// route.BuildCandidates. Empty means direct only.
	Candidates []candidate.Candidate
	// Rules are the destination rules; nil: none.
	Rules *route.Rules

	// ConnectTimeout bounds opening one path (TCP, CONNECT answer, TLS
	// probe); --timeout-ms. Zero: 5 s.
	ConnectTimeout time.Duration
	// FastFail is the connect timeout of the first attempt when it comes
	// from the per-host cache or the health preference, which is expected
	// to work, so a dead one is left quickly (--fast-fail-ms). Zero: 2 s.
	FastFail time.Duration
	// ResponseTimeout bounds the wait for response headers after the request
	// was sent; --response-timeout-ms. Zero: 60 s.
	ResponseTimeout time.Duration
	// RaceDelay starts the next hot candidate in parallel when the path
	// being opened is not open after this long (a silent gateway costs
	// this, not a whole connect timeout; --race-delay-ms). Zero: racing off.
	RaceDelay time.Duration
	// TLSProbe runs a TLS handshake probe before opening a tunnel to port
	// 443 on a cache miss (a gateway that accepts CONNECT but cannot reach
	// the origin fails here, not in the client's handshake; --verify-tls).
	TLSProbe bool

	// TunnelIdleTimeout closes a CONNECT tunnel that moved no byte in
	// either direction for this long
	// (--tunnel-idle-timeout-ms). Zero: 1 h; negative: no bound.
	TunnelIdleTimeout time.Duration
	// TunnelHalfCloseTimeout closes a tunnel whose one direction has ended
	// (a half-close) once the other moved no byte for this long
	// (--tunnel-half-close-timeout-ms). Zero: 60 s; negative: no bound.
	TunnelHalfCloseTimeout time.Duration

	// HeadTimeout bounds the arrival of a request head: the first head on
	// a connection must be complete this long after accept, a later one
	// this long after its first byte (the wait for that byte between
	// requests is the 5 min keep-alive idle time). Slow-header clients are
	// closed without an answer. Zero: 10 s.
	HeadTimeout time.Duration
	// MaxPendingHeads bounds the connections that have not yet sent a
	// complete request head (new connections, and keep-alive ones part-way
	// through a head); past it the oldest such connection is closed, so a
	// flood of slow clients cannot crowd out new ones. Zero: 1024.
	MaxPendingHeads int

	// Cooldown is how long a failed candidate moves to the cold zone
	// (--cooldown-ms). Zero disables cooldowns.
	Cooldown time.Duration
	// PrefTTL is the life of a per-host cache entry (--pref-ttl-ms). Zero: 60 s; negative disables the cache.
	PrefTTL time.Duration
	// CacheSize bounds the per-host cache (hosts). Zero: 1000.
	CacheSize int

	// HealthURL is checked through every candidate; nil: off.
	HealthURL *url.URL
	// HealthInterval is the period of health checks (--health-interval-ms).
	// Zero: no periodic checks (failures still kick one when HealthURL is
	// set).
	HealthInterval time.Duration
	// HealthRecoverCount is the number of consecutive passing checks a
	// failed candidate needs to become the preference again (one pass may
	// be luck; a flapping gateway should not lead).
	// Zero: 2.
	HealthRecoverCount int
	// HealthTLS configures TLS to an https:// health URL (RootCAs for
	// tests); nil: system roots. ServerName is set per check.
	HealthTLS *tls.Config

	// GatewayTLS is the base TLS configuration for https:// gateways
	// (RootCAs for tests); nil: system roots (on Linux also
	// SSL_CERT_FILE and SSL_CERT_DIR). ServerName is always the gateway's
	// host; a candidate's CAFile replaces RootCAs for that gateway.
	GatewayTLS *tls.Config

	// LoopbackDirect dials loopback destinations direct, never through a
	// gateway (a gateway cannot reach this machine's loopback;
	// --loopback-direct, default on in cmd/).
	LoopbackDirect bool
	// RetryNonIdempotentAfterSend replays POST, PATCH … even after the
	// request may have reached the origin, accepting a repeated side effect
	// (--retry-non-idempotent-after-send).
	RetryNonIdempotentAfterSend bool
	// RetryWithIdempotencyKey replays non-idempotent requests that carry a
	// non-empty Idempotency-Key or X-Idempotency-Key: the origin can drop the
	// duplicate (--retry-non-idempotent-with-idempotency-key).
	RetryWithIdempotencyKey bool

	// Settings are the settings this configuration was built from, as the
	// status document shows them (Status.Settings): by name,
	// values masked, in the builder's own units and meaning of zero. The
	// engine reports them as given and reads nothing from them;
	// internal/app/settings fills them from its key table. nil: none shown.
	// Never modified once given.
	Settings map[string]any

	// Handler serves origin-form requests (the proxy's own endpoints:
	// status, pool). nil answers 404.
	Handler http.Handler
	// Logger receives structured logs (host, candidate, phase, reason);
	// nil discards them.
	Logger *slog.Logger
	// Now is the clock for cooldowns, cache and health; nil: time.Now.
	Now func() time.Time
}

// Defaults of the settings of the same names (the command-line flags'
// defaults).
const (
	DefaultConnectTimeout  = 5 * time.Second  // --timeout-ms
	DefaultFastFail        = 2 * time.Second  // --fast-fail-ms
	DefaultResponseTimeout = 60 * time.Second // --response-timeout-ms
	DefaultPrefTTL         = 60 * time.Second // --pref-ttl-ms
	DefaultCacheSize       = 1000             // per-host cache entries
	DefaultRecoverCount    = 2                // passing checks to lead again
	DefaultHeadTimeout     = 10 * time.Second // a client that never finishes its head
	DefaultTunnelIdle      = time.Hour        // an idle tunnel
	DefaultTunnelHalfClose = time.Minute      // a half-closed tunnel
	DefaultMaxPendingHeads = 1024             // heads being read at once
)

// zeroToDefault sets *p to d when *p is the zero value (the field was
// left unset).
func zeroToDefault[T comparable](p *T, d T) {
	var zero T
	if *p == zero {
		*p = d
	}
}

// Defaulted is c with the defaults NewEngine fills in where c leaves a
// field zero (each field's comment says which), or the error NewEngine
// returns for c (a negative duration where none is allowed, a health URL
// that is not http or https).
func (c Config) Defaulted() (Config, error) {
	err := c.setDefaults()
	return c, err
}

func (c *Config) setDefaults() error {
	zeroToDefault(&c.ConnectTimeout, DefaultConnectTimeout)
	zeroToDefault(&c.FastFail, DefaultFastFail)
	zeroToDefault(&c.ResponseTimeout, DefaultResponseTimeout)
	zeroToDefault(&c.PrefTTL, DefaultPrefTTL)
	zeroToDefault(&c.CacheSize, DefaultCacheSize)
	zeroToDefault(&c.TunnelIdleTimeout, DefaultTunnelIdle)
	zeroToDefault(&c.TunnelHalfCloseTimeout, DefaultTunnelHalfClose)
	zeroToDefault(&c.HeadTimeout, DefaultHeadTimeout)
	if c.MaxPendingHeads <= 0 {
		c.MaxPendingHeads = DefaultMaxPendingHeads
	}
	zeroToDefault(&c.HealthRecoverCount, DefaultRecoverCount)
	if c.ConnectTimeout < 0 || c.ResponseTimeout < 0 || c.FastFail < 0 || c.RaceDelay < 0 || c.Cooldown < 0 || c.HealthInterval < 0 || c.HeadTimeout < 0 {
		return errors.New("proxy: negative duration in Config")
	}
	if c.HealthURL != nil && c.HealthURL.Scheme != "http" && c.HealthURL.Scheme != "https" {
		return errors.New("proxy: HealthURL must be http:// or https://")
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if len(c.Candidates) == 0 {
		c.Candidates = []candidate.Candidate{candidate.Direct}
	}
	return nil
}
