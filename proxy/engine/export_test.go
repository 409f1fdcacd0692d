package engine

import (
	"context"
	"net"
	"time"

	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/dial"
	"github.com/dual-proxy/dual-proxy/proxy/health"
	"github.com/dual-proxy/dual-proxy/proxy/route"
	"github.com/dual-proxy/dual-proxy/proxy/statusdoc"
)

// The engine's state, for the tests that drive it through a proxy server
// (package engine_test) and look at what a request left behind.

func (e *Engine) Cooldowns() *route.Cooldowns { return e.cooldowns }
func (e *Engine) Cache() *route.Cache         { return e.cache }
func (e *Engine) HealthState() *route.Health  { return e.health }
func (e *Engine) Checker() *health.Checker    { return e.checker }
func (e *Engine) Dialer() *dial.Dialer        { return &e.dialer }
func (e *Engine) DecisionLog() *statusdoc.Log { return &e.decisions }
func (e *Engine) KickHealth()                 { e.kickHealth() }

// Plan is plan with each attempt's candidate and timeout.
func (e *Engine) Plan(host string, port int) ([]Attempt, bool) { return e.plan(host, port) }

// Attempt is one planned attempt.
type Attempt = attempt

// Cand is the attempt's candidate.
func (a attempt) Cand() candidate.Candidate { return a.cand }

// SetOpenAttempt makes f open every attempt's path instead of the dialer.
func (e *Engine) SetOpenAttempt(f func(ctx context.Context, a Attempt, host, target string, probe bool) (net.Conn, error)) {
	e.openAttempt = f
}

// Timeout is the attempt's connect timeout.
func (a attempt) Timeout() time.Duration { return a.timeout }
