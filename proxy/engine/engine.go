// Package engine is the proxy's path selection: for a destination it
// plans the candidates (rule, per-host cache, health preference, default
// order, cooling ones last; proxy/route), opens a path through them with
// staggered racing and the TLS probe (CONNECT, DialContext), or sends a
// plain request through them under the replay rules (Forward), and keeps
// the bookkeeping every later choice reads: cooldowns, the per-host
// cache, the health checks' state, the recent decisions and the traffic
// counters (Status, Traffic).
//
// The listener front end (package proxy) reads client connections and
// calls Open and Forward; the model pool and other Go users call
// DialContext or send through RoundTripper and PoolRoundTripper. The
// engine opens no listener and reads no client connection.
package engine

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/lib/via"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/dial"
	"github.com/dual-proxy/dual-proxy/proxy/health"
	"github.com/dual-proxy/dual-proxy/proxy/route"
	"github.com/dual-proxy/dual-proxy/proxy/statusdoc"
	"github.com/dual-proxy/dual-proxy/proxy/upstream"
)

// Engine is the candidate selection state shared by the server, the Dialer
// and the RoundTripper (SPEC OPS-4): destination rules, per-host cache,
// cooldowns, health preference and recent decisions, plus an HTTP transport
// per candidate for plain requests. Create it with NewEngine; stop its
// health loop with Close.
type Engine struct {
	// cfg is the configuration at start: the fields Reconfigure keeps
	// (Handler, Logger, Now, the TLS bases, CacheSize, MaxPendingHeads).
	// Everything a running instance can change is read from live.
	cfg    Config
	live   atomic.Pointer[liveConfig] // live.go; one Load per request, tunnel or check
	dialer dial.Dialer

	cache     *route.Cache
	cooldowns *route.Cooldowns
	health    *route.Health
	checker   *health.Checker // health.go; always running, a run without a health URL does nothing
	prober    health.Prober   // one health check, through client and dialer
	decisions statusdoc.Log

	tlsProbes atomic.Int64  // TLS probes started (status, tests)
	counters  Counters      // traffic counters (traffic.go, metrics)
	via       via.Pseudonym // this proxy's Via name (loop detection)

	// openAttempt replaces openVerified in tests (a path that opens
	// whatever the context says); nil in production.
	openAttempt func(ctx context.Context, a attempt, host, target string, probe bool) (net.Conn, error)

	client upstream.Client // plain forwarding's HTTP/1.1 client and its idle pool

	// answered holds the gateways that answered since they were
	// configured (race_plain.go: a gateway never heard from is not cooled
	// for one silence, but raced).
	answered answeredSet

	mu     sync.Mutex
	closed bool
}

// New validates cfg (see Config), applies its defaults and returns an
// engine; its health loop runs until Close when cfg.HealthURL is set.
func New(cfg Config) (*Engine, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	e := &Engine{
		cfg:       cfg,
		cache:     route.NewCacheClock(cfg.CacheSize, cfg.PrefTTL, cfg.Now),
		cooldowns: route.NewCooldowns(cfg.Cooldown, cfg.Now),
		health:    route.NewHealth(cfg.HealthRecoverCount, cfg.Now),
		via:       via.New("dual-proxy-"),
	}
	e.live.Store(newLiveConfig(cfg))
	e.counters.cands = map[string]*candTraffic{}
	e.dialer.GatewayTLS = cfg.GatewayTLS
	if err := e.dialer.Prepare(cfg.Candidates); err != nil {
		return nil, err // an https gateway's CA file: unreadable is a configuration error, not a path failure
	}
	e.client = upstream.Client{Dial: e.dialer.Forward, ResponseTimeout: cfg.ResponseTimeout}
	e.startHealth()
	return e, nil
}

// Close stops the health loop and closes idle upstream connections. It
// does not close tunnels or requests in flight (Server.Shutdown does).
func (e *Engine) Close() {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	e.closed = true
	e.mu.Unlock()
	e.checker.Stop()
	e.CloseIdle()
}

// Config is the configuration the engine started with, defaults applied
// (a server on this engine takes its handler, logger and head bounds from
// it; Reconfigure changes the live settings, not this).
func (e *Engine) Config() Config { return e.cfg }

// Via is this proxy's Via name: every request and tunnel it sends upstream
// carries its entry, and a request that arrives naming it came round
// through a gateway that leads back here (508, RFC 5842 §7.2).
func (e *Engine) Via() via.Pseudonym { return e.via }

// HeadTimeout is the live bound on reading a request head, so a client
// that never finishes one does not hold a connection.
func (e *Engine) HeadTimeout() time.Duration { return e.live.Load().cfg.HeadTimeout }

// TunnelTimeouts are the live bounds of a new tunnel (SPEC CON-2): idle
// both ways, and after one side half-closed.
func (e *Engine) TunnelTimeouts() (idle, halfClose time.Duration) {
	lc := e.live.Load()
	return lc.cfg.TunnelIdleTimeout, lc.cfg.TunnelHalfCloseTimeout
}

// attempt is one candidate to try and its connect timeout.
type attempt struct {
	cand    candidate.Candidate
	timeout time.Duration
	// cached is true for the first attempt when it is host's per-host
	// cache entry: it skips the TLS probe (the path worked for host within
	// the TTL). The attempts after it are cache misses and are probed as
	// usual.
	cached bool
}

// plan returns the attempts for host (normalized) and port in order (SPEC
// ORD-1, ORD-2): rule > cache > health preference > default order, cooling
// candidates last. The first attempt gets the fast-fail timeout when it
// comes from the cache or the preference. cacheHit reports a cache
// entry for host that leads the order (it skips the TLS probe).
// Loopback destinations go direct only (a gateway cannot reach them). The
// result is read-only
// (it may be shared).
func (e *Engine) plan(host string, port int) (atts []attempt, cacheHit bool) {
	lc := e.live.Load()
	return e.planFor(lc, host, port, lc.cfg.LoopbackDirect && isLoopback(host))
}

// planFor is plan under the configuration lc with isLoopback(host) known
// (loopback: LoopbackDirect and a loopback host; a connection's plain
// requests remember the verdict for their last host, forward).
func (e *Engine) planFor(lc *liveConfig, host string, port int, loopback bool) (atts []attempt, cacheHit bool) {
	if loopback {
		return lc.loopPlan, false
	}
	cached, _ := e.cache.Get(host)
	preferred := e.health.Preferred()
	if len(lc.onePlans) > 0 {
		// One candidate: Order's answer is that candidate whatever the
		// rule, and whether it cools (a lone cooling candidate is still
		// tried: fail open, an unproven path beats certain failure); only
		// the cache and the preference
		// choose its timeout. Plans made once (no rule match,
		// cooldown lookup or allocation per request).
		switch k := lc.onePlans[0][0].cand.Key(); k {
		case cached:
			return lc.onePlans[0], true
		case preferred:
			return lc.onePlans[1], false
		}
		return lc.onePlans[2], false
	}
	rule := lc.cfg.Rules.Match(host, port)
	var dest string // made on the first cooldown lookup, once per plan
	cands := route.Order(lc.cfg.Candidates, rule, cached, preferred, func(key string) bool {
		if dest == "" {
			dest = route.Dest(host, port)
		}
		return e.cooldowns.Cooling(key, dest)
	})
	atts = make([]attempt, len(cands))
	for i, c := range cands {
		atts[i] = attempt{cand: c, timeout: lc.cfg.ConnectTimeout}
	}
	if len(atts) > 0 {
		k := atts[0].cand.Key()
		cacheHit = k == cached
		atts[0].cached = cacheHit
		if cacheHit || k == preferred {
			atts[0].timeout = min(lc.cfg.FastFail, lc.cfg.ConnectTimeout)
		}
	}
	return atts, cacheHit
}

// candName is c.String(), without building it when c is a configured
// candidate (a gateway's "KIND://host:port" cost an allocation per
// decision).
func (e *Engine) candName(c candidate.Candidate) string { return e.live.Load().candName(c) }

// candName is Engine.candName under the snapshot lc.
func (lc *liveConfig) candName(c candidate.Candidate) string {
	for i := range lc.cfg.Candidates {
		if lc.cfg.Candidates[i] == c {
			return lc.names[i]
		}
	}
	return c.String()
}

// singlePlans returns plan's three answers for a lone candidate c: cache
// hit (probe skipped, fast-fail timeout), health-preferred
// (fast-fail timeout), neither.
func singlePlans(c candidate.Candidate, cfg Config) [3][]attempt {
	fast := min(cfg.FastFail, cfg.ConnectTimeout)
	return [3][]attempt{
		{{cand: c, timeout: fast, cached: true}},
		{{cand: c, timeout: fast}},
		{{cand: c, timeout: cfg.ConnectTimeout}},
	}
}

// fail records a path failure of pe.Candidate for host and port: cooldown
// by tier (a host-scoped one for host:port only: one origin's fault does
// not cool the gateway for others), the cache entry dropped when it named
// that candidate, a gateway-wide failure marked in the health state, and a
// health check kicked (to learn soon whether the gateway is back).
func (e *Engine) fail(host string, port int, pe *candidate.PathError) {
	e.cfg.Logger.Info("path failed", logAttrs(host, pe)...)
	e.cooldowns.Fail(pe, route.Dest(host, port))
	if pe.Status != 0 {
		e.markAnswered(pe.Candidate) // it answered, if only to refuse
	}
	if pe.Tier == candidate.TierNone {
		return
	}
	e.cache.RemoveIf(host, pe.Candidate.Key())
	if pe.Tier == candidate.TierGateway {
		e.health.MarkFailed(pe.Candidate.Key())
	}
	e.kickHealth()
}

// allFailed is called when no candidate is left for host (counts as
// a failure and kicks a health check). A request of a caller that reports
// its own failures (Transport.Caller: the model pool logs the member's
// failure and fails over) is logged at debug: a warning here read as the
// network being down while the pool's next member served.
func (e *Engine) allFailed(host, caller string) {
	if caller != "" {
		e.cfg.Logger.Debug("no candidate left", "host", host, "caller", caller)
	} else {
		e.cfg.Logger.Warn("no candidate left", "host", host)
	}
	e.kickHealth()
}

// succeed records that c served host (per-host cache, status counters).
func (e *Engine) succeed(host string, c candidate.Candidate) { e.succeedMemo(host, c, nil) }

// putMemo is what a client connection's last cache put was (plain
// requests, forward): host → key at at, leaving the cache at gen.
type putMemo struct {
	host, key string
	at        time.Time
	gen       uint64
}

// cacheRefresh bounds how long after a put its entry is not put again by
// the same connection's next success through the same candidate: the
// entry's expiry then lags the last success by less than TTL/60 (1 s at
// the default 60 s).
func cacheRefresh(ttl time.Duration) time.Duration { return min(ttl/60, time.Second) }

// succeedMemo is succeed with the connection's memo of its last put (nil:
// none): when that put was for host through c, is younger than
// cacheRefresh and the cache has not changed since (route.Cache.Fresh),
// the entry already says c with an expiry at most cacheRefresh older, and
// the put is skipped (a lock and an LRU update per request).
func (e *Engine) succeedMemo(host string, c candidate.Candidate, m *putMemo) {
	k := c.Key()
	now := e.cfg.Now()
	switch {
	case m == nil:
		e.cache.PutAt(host, k, now)
	case m.host == host && m.key == k && e.cache.Fresh(m.gen) && now.Sub(m.at) < cacheRefresh(e.cache.TTL()):
	default:
		*m = putMemo{host: host, key: k, at: now, gen: e.cache.PutAt(host, k, now)}
	}
	e.cooldowns.Success(k)
}

func (e *Engine) kickHealth() { e.checker.Kick() }

// isLoopback reports whether host is localhost, 127.0.0.0/8 or ::1.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// CloseIdle closes the idle upstream connections of plain forwarding.
func (e *Engine) CloseIdle() { e.client.CloseIdle() }

// AllFailedError is returned when no candidate could serve host (SPEC
// HTTP-6, CON-3). Its message lists each attempt with phase and redacted
// candidate.
type AllFailedError struct {
	Host string
	Errs []error
}

// Error lists every attempt: "all candidates failed for HOST: PHASE via C: cause; …".
func (e *AllFailedError) Error() string {
	var b strings.Builder
	b.WriteString("all candidates failed for ")
	b.WriteString(e.Host)
	for i, err := range e.Errs {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(err.Error())
	}
	return b.String()
}

// logAttrs are the slog attributes of a path failure: host, candidate,
// phase, reason (never paths, headers or credentials: they may carry
// secrets).
func logAttrs(host string, err error) []any {
	var pe *candidate.PathError
	if errors.As(err, &pe) {
		return []any{"host", host, "candidate", pe.Candidate.String(), "phase", string(pe.Phase), "tier", pe.Tier.String(), "reason", pe.Err.Error()}
	}
	return []any{"host", host, "reason", err.Error()}
}

// ms is d in milliseconds with microsecond resolution.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
