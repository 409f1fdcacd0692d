package engine

import (
	"context"

	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/health"
	"github.com/dual-proxy/dual-proxy/proxy/route"
)

// healthTarget is the engine side of its health checker (proxy/health):
// each run's settings from the live configuration (a reload applies from
// the next run), one check through the engine's prober, and a gateway
// proved alive leaves its cooldown.
type healthTarget struct{ e *Engine }

// Settings are the health settings of the live configuration now.
func (t healthTarget) Settings() health.Settings { return healthSettings(t.e.live.Load()) }

// Check makes one health check of c through the engine's client and dialer.
func (t healthTarget) Check(ctx context.Context, s health.Settings, c candidate.Candidate) (route.HealthResult, bool) {
	r, local := t.e.prober.Check(ctx, s, c)
	if r.Alive {
		t.e.markAnswered(c) // proved: a later silence is the host's (race_plain.go)
	}
	return r, local
}

// Proved ends c's gateway cooldown (SPEC CD-2).
func (t healthTarget) Proved(c candidate.Candidate) { t.e.cooldowns.ClearGateway(c.Key()) }

// healthSettings are the health check settings of the snapshot lc.
func healthSettings(lc *liveConfig) health.Settings {
	return health.Settings{URL: lc.cfg.HealthURL, Interval: lc.cfg.HealthInterval,
		ConnectTimeout: lc.cfg.ConnectTimeout, Candidates: lc.cfg.Candidates}
}

// startHealth makes the engine's prober and starts its health checker
// (always running; a run without a health URL does nothing).
func (e *Engine) startHealth() {
	e.prober = health.Prober{Client: &e.client, Dialer: &e.dialer, TLS: e.cfg.HealthTLS, GatewayFailure: isGatewayFailure}
	e.checker = health.Start(healthTarget{e}, e.health, e.cfg.Logger)
}

// HealthRuns returns how many health checks have started (tests, status).
func (e *Engine) HealthRuns() int { return e.checker.Runs() }
