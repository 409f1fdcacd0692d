// Package metrics exports the proxy's and the pool's counters in the
// Prometheus text format at GET /metrics.
//
// Two kinds of series:
//   - event series, updated once per routing decision or pool call from the
//     engine's and the pool's hooks (never per byte): requests, failures by
//     phase, failovers, path-open latency, pool calls, time to first token,
//     tokens;
//   - state series, read from the engine and the pool when scraped: open
//     tunnels, tunnel bytes, cooldowns, health results, bound sessions,
//     member cooldowns.
//
// Labels are bounded by the configuration: a candidate (its redacted URL),
// a phase or class from a fixed set, a pool or member id. Destination hosts,
// paths and session ids are never labels, so the series count does not grow
// with the traffic.
package metrics

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/dual-proxy/dual-proxy/pool"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/balance"
	"github.com/dual-proxy/dual-proxy/proxy"
	"github.com/dual-proxy/dual-proxy/proxy/statusdoc"
)

// Metrics is one registry with the proxy's and the pool's series. Create
// it with New, connect the engine with AttachEngine and the pool with
// PoolObserver/AttachPool, serve Handler at /metrics.
type Metrics struct {
	reg *prometheus.Registry

	requests  *prometheus.CounterVec   // kind, candidate
	failures  *prometheus.CounterVec   // candidate, phase
	failovers *prometheus.CounterVec   // kind
	openTime  *prometheus.HistogramVec // kind, candidate

	poolCalls     *prometheus.CounterVec   // pool, member, class
	poolFailovers *prometheus.CounterVec   // pool
	poolTTFT      *prometheus.HistogramVec // pool, member
	poolTokens    *prometheus.CounterVec   // pool, member, kind
	poolResends   *prometheus.CounterVec   // pool, member

	settingsChanges *prometheus.CounterVec // by

	mu     sync.Mutex
	engine *proxy.Engine
	pool   func() *pool.Pool

	runtimeOnce sync.Once // registers the Go runtime and process collectors
	servedCache sync.Map  // servedKey → *servedSeries (decision)
	// lastServed is the series the last decision found: a run of
	// decisions for one kind and candidate (a client's plain requests)
	// compares two strings instead of hashing them into servedCache.
	lastServed atomic.Pointer[servedSeries]
}

// New returns a Metrics with no engine or pool attached yet. The Go runtime
// and process collectors join the registry on the first scrape (Handler).
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dual_proxy_requests_total",
			Help: "Routing decisions by kind (connect, http) and the candidate that served them (none: every candidate failed)."}, []string{"kind", "candidate"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dual_proxy_failures_total",
			Help: "Failed path attempts by candidate and phase (SPEC CD-3)."}, []string{"candidate", "phase"}),
		failovers: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dual_proxy_failovers_total",
			Help: "Decisions served by a later candidate after at least one failed."}, []string{"kind"}),
		openTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "dual_proxy_path_open_seconds",
			Help:    "Time from the request to an open path (connect) or the response head (http), by serving candidate.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}}, []string{"kind", "candidate"}),
		poolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dual_proxy_pool_calls_total",
			Help: "Finished pool calls by pool, answering member (none: no member answered) and class (ok on success)."}, []string{"pool", "member", "class"}),
		poolFailovers: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dual_proxy_pool_failovers_total",
			Help: "Members that failed before another one answered, by pool."}, []string{"pool"}),
		poolTTFT: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "dual_proxy_pool_ttft_seconds",
			Help:    "Time from the request to the first byte sent to the client, successful calls, by pool and member.",
			Buckets: []float64{.1, .25, .5, 1, 2, 4, 8, 15, 30, 60, 120}}, []string{"pool", "member"}),
		poolTokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dual_proxy_pool_tokens_total",
			Help: "Tokens the members reported, by pool, member and kind (input, output, cache_read, cache_creation)."}, []string{"pool", "member", "kind"}),
		poolResends: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dual_proxy_pool_resends_total",
			Help: "Member requests sent once more on a new connection because the channel closed a kept-alive one before answering, by pool and member (SPEC POOL-26)."}, []string{"pool", "member"}),
	}
	m.settingsChanges = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dual_proxy_settings_changes_total",
		Help: "Applied changes of the live settings by who made them (api, cli, page, file; SPEC OPS-7)."}, []string{"by"})
	m.reg.MustRegister(m.requests, m.failures, m.failovers, m.openTime, m.poolCalls, m.poolFailovers, m.poolTTFT, m.poolTokens, m.poolResends, m.settingsChanges, stateCollector{m})
	return m
}

// Handler serves the registry in the Prometheus text format. Mount it
// behind statusdoc.LocalOnly, like the status endpoints.
//
// The Go runtime and process collectors are registered on the first
// request: they read their values only when scraped anyway, and building
// them (≈ 100 runtime/metrics descriptors) cost every launcher start
// ≈ 0.3 ms of CPU and the heap to hold them, scraped or not.
func (m *Metrics) Handler() http.Handler {
	h := promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.registry()
		h.ServeHTTP(w, r)
	})
}

// registry is the registry with every collector in it.
func (m *Metrics) registry() *prometheus.Registry {
	m.runtimeOnce.Do(func() {
		m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	})
	return m.reg
}

// AttachEngine subscribes to e's decisions and reports its state. Call it
// once per engine.
func (m *Metrics) AttachEngine(e *proxy.Engine) {
	m.mu.Lock()
	m.engine = e
	m.mu.Unlock()
	e.OnDecision(m.decision)
}

// decision counts one routing decision, the one the status document records.
func (m *Metrics) decision(d statusdoc.Decision) {
	served := d.Candidate
	if served == "" {
		served = "none"
	}
	s := m.served(d.Kind, served)
	s.requests.Inc()
	for _, f := range d.Failed {
		m.failures.WithLabelValues(f.Candidate, f.Phase).Inc()
	}
	if d.Candidate != "" {
		if len(d.Failed) > 0 {
			m.failovers.WithLabelValues(d.Kind).Inc()
		}
		s.openTime.Observe(d.LatencyMS / 1000)
	}
}

// servedKey and servedSeries: the requests counter and path-open
// histogram of one (kind, candidate), looked up in the vectors once
// (hashing and locking the label values cost every decision ≈ 0.5 µs).
// Labels stay bounded: kinds × candidates plus "none".
type servedKey struct{ kind, candidate string }

type servedSeries struct {
	key      servedKey
	requests prometheus.Counter
	openTime prometheus.Observer
}

func (m *Metrics) served(kind, candidate string) *servedSeries {
	k := servedKey{kind, candidate}
	if s := m.lastServed.Load(); s != nil && s.key == k {
		return s
	}
	v, ok := m.servedCache.Load(k)
	if !ok {
		v, _ = m.servedCache.LoadOrStore(k, &servedSeries{
			key:      k,
			requests: m.requests.WithLabelValues(kind, candidate),
			openTime: m.openTime.WithLabelValues(kind, candidate),
		})
	}
	s := v.(*servedSeries)
	m.lastServed.Store(s)
	return s
}

// PoolObserver is the pool.Options.Observer that feeds the pool series.
func (m *Metrics) PoolObserver() pool.Observer {
	return pool.Observer{Call: m.poolCall, Usage: m.poolUsage, Resend: m.poolResend}
}

// AttachPool reports the state (bound sessions, cooldowns) of the pool
// current returns (nil: none), read at scrape time.
func (m *Metrics) AttachPool(current func() *pool.Pool) {
	m.mu.Lock()
	m.pool = current
	m.mu.Unlock()
}

func (m *Metrics) poolCall(r balance.CallRecord) {
	member, class := r.Member, r.Class
	if member == "" {
		member = "none"
	}
	if class == "" {
		class = "ok"
	}
	m.poolCalls.WithLabelValues(r.Pool, member, class).Inc()
	if r.Failovers > 0 {
		m.poolFailovers.WithLabelValues(r.Pool).Add(float64(r.Failovers))
	}
	if r.Class == "" && r.Member != "" {
		m.poolTTFT.WithLabelValues(r.Pool, r.Member).Observe((time.Duration(r.TTFBMs) * time.Millisecond).Seconds())
	}
}

func (m *Metrics) poolResend(poolID, member string) {
	m.poolResends.WithLabelValues(poolID, member).Inc()
}

func (m *Metrics) poolUsage(poolID, member string, u neutral.Accounting) {
	for _, k := range []struct {
		kind string
		n    int64
	}{{"input", u.Input}, {"output", u.Output}, {"cache_read", u.CacheRead}, {"cache_creation", u.CacheCreation}} {
		if k.n > 0 {
			m.poolTokens.WithLabelValues(poolID, member, k.kind).Add(float64(k.n))
		}
	}
}
