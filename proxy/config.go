package proxy

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/dual-proxy/dual-proxy/proxy/route"
)

// Config is the proxy's resolved configuration. cmd/ builds it from flags,
// environment and defaults and validates it; New fills zero durations with
// the SPEC defaults.
type Config struct {
	// Candidates in default order, direct last (SPEC GW-1), as built by
	// route.BuildCandidates.
	Candidates []route.Candidate

	// ConnectTimeout bounds opening one path (TCP, CONNECT answer); SPEC
	// HTTP-4 --timeout-ms, default 5 s.
	ConnectTimeout time.Duration
	// ResponseTimeout bounds the wait for response headers after the request
	// was sent; SPEC HTTP-4 --response-timeout-ms, default 60 s.
	ResponseTimeout time.Duration
	// LoopbackDirect dials loopback destinations direct, never through a
	// gateway (SPEC GW-5, --loopback-direct, default on in cmd/).
	LoopbackDirect bool

	// RetryNonIdempotentAfterSend replays POST, PATCH … even after the
	// request may have reached the origin (SPEC HTTP-3,
	// --retry-non-idempotent-after-send).
	RetryNonIdempotentAfterSend bool
	// RetryWithIdempotencyKey replays non-idempotent requests that carry a
	// non-empty Idempotency-Key or X-Idempotency-Key (SPEC HTTP-3,
	// --retry-non-idempotent-with-idempotency-key).
	RetryWithIdempotencyKey bool

	// Handler serves origin-form requests (the proxy's own endpoints:
	// status, pool; SPEC HTTP-1). nil answers 404.
	Handler http.Handler
	// Logger receives structured logs (host, candidate, phase, reason);
	// nil discards them.
	Logger *slog.Logger
}

// Defaults from SPEC HTTP-4.
const (
	DefaultConnectTimeout  = 5 * time.Second
	DefaultResponseTimeout = 60 * time.Second
)

func (c *Config) setDefaults() error {
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.ResponseTimeout == 0 {
		c.ResponseTimeout = DefaultResponseTimeout
	}
	if c.ConnectTimeout < 0 || c.ResponseTimeout < 0 {
		return errors.New("proxy: negative timeout")
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if len(c.Candidates) == 0 {
		c.Candidates = []route.Candidate{route.Direct}
	}
	return nil
}
