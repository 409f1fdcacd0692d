package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dual-proxy/dual-proxy/proxy/statusdoc"
)

// State series, read from the engine and the pool at scrape time.
var (
	descOpenTunnels = prometheus.NewDesc("dual_proxy_open_tunnels",
		"CONNECT tunnels relaying right now.", nil, nil)
	descTunnelBytes = prometheus.NewDesc("dual_proxy_tunnel_bytes_total",
		"Bytes relayed through finished CONNECT tunnels, by candidate and direction (up: client to destination).", []string{"candidate", "direction"}, nil)
	descHTTPBytes = prometheus.NewDesc("dual_proxy_http_response_bytes_total",
		"Plain-HTTP response body bytes sent to clients.", nil, nil)
	descNotHTTP = prometheus.NewDesc("dual_proxy_not_http_refused_total",
		"Client connections answered 400 and closed because their first byte cannot start an HTTP request line (SPEC HTTP-5d), by what it suggests: tls (an https:// proxy URL), socks, other.", []string{"first_byte"}, nil)
	descCooling = prometheus.NewDesc("dual_proxy_candidate_cooling",
		"1 while the candidate is in a gateway-wide cooldown (SPEC CD-1), else 0.", []string{"candidate"}, nil)
	descHostCooldowns = prometheus.NewDesc("dual_proxy_candidate_host_cooldowns",
		"Running host-scoped cooldowns of the candidate (destinations it is tried last for).", []string{"candidate"}, nil)
	descCandSuccesses = prometheus.NewDesc("dual_proxy_candidate_successes_total",
		"Paths the candidate opened or requests it served.", []string{"candidate"}, nil)
	descHealthAlive = prometheus.NewDesc("dual_proxy_health_alive",
		"Result of the candidate's last health check: 1 alive, 0 failed (absent before the first run).", []string{"candidate"}, nil)
	descHealthEligible = prometheus.NewDesc("dual_proxy_health_eligible",
		"1 when the candidate may be health-preferred (SPEC HC-4 hysteresis), else 0.", []string{"candidate"}, nil)
	descHealthRuns = prometheus.NewDesc("dual_proxy_health_runs_total",
		"Health checks started.", nil, nil)
	descBound = prometheus.NewDesc("dual_proxy_pool_bound_sessions",
		"Sessions bound to the member in the pool (SPEC POOL-5).", []string{"pool", "member"}, nil)
	descMemberCooling = prometheus.NewDesc("dual_proxy_pool_member_cooling",
		"1 while the member's channel is cooling down, else 0.", []string{"pool", "member"}, nil)
	descMemberRetry = prometheus.NewDesc("dual_proxy_pool_member_cooldown_remaining_seconds",
		"Seconds until a cooling member is tried again (absent when ready); the status page's \"retry in\".", []string{"pool", "member"}, nil)
	descMemberSince = prometheus.NewDesc("dual_proxy_pool_member_cooldown_start_time_seconds",
		"Unix time the member's running cooldown began (absent when ready or unknown); the status page's \"since\".", []string{"pool", "member"}, nil)
)

// stateCollector reads the attached engine and pool when scraped.
type stateCollector struct{ m *Metrics }

func (c stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descOpenTunnels, descTunnelBytes, descHTTPBytes, descNotHTTP, descCooling, descHostCooldowns, descCandSuccesses,
		descHealthAlive, descHealthEligible, descHealthRuns, descBound, descMemberCooling, descMemberRetry, descMemberSince} {
		ch <- d
	}
}

func (c stateCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.Lock()
	e, current := c.m.engine, c.m.pool
	c.m.mu.Unlock()
	if e != nil {
		t := e.Traffic()
		ch <- prometheus.MustNewConstMetric(descOpenTunnels, prometheus.GaugeValue, float64(t.OpenTunnels))
		for _, ct := range t.Candidates {
			ch <- prometheus.MustNewConstMetric(descTunnelBytes, prometheus.CounterValue, float64(ct.Up), ct.Candidate, "up")
			ch <- prometheus.MustNewConstMetric(descTunnelBytes, prometheus.CounterValue, float64(ct.Down), ct.Candidate, "down")
		}
		ch <- prometheus.MustNewConstMetric(descHTTPBytes, prometheus.CounterValue, float64(t.HTTPResponseBytes))
		ch <- prometheus.MustNewConstMetric(descNotHTTP, prometheus.CounterValue, float64(t.NotHTTP.TLS), "tls")
		ch <- prometheus.MustNewConstMetric(descNotHTTP, prometheus.CounterValue, float64(t.NotHTTP.SOCKS), "socks")
		ch <- prometheus.MustNewConstMetric(descNotHTTP, prometheus.CounterValue, float64(t.NotHTTP.Other), "other")
		collectEngine(ch, e.Status())
	}
	if current == nil {
		return
	}
	p := current()
	if p == nil {
		return
	}
	now := time.Now()
	for _, ps := range p.Status().Pools {
		for _, ms := range ps.Members {
			ch <- prometheus.MustNewConstMetric(descBound, prometheus.GaugeValue, float64(ms.BoundSessions), ps.ID, ms.ID)
			ch <- prometheus.MustNewConstMetric(descMemberCooling, prometheus.GaugeValue, boolf(ms.State == "cooling"), ps.ID, ms.ID)
			if ms.CooldownUntil != nil {
				ch <- prometheus.MustNewConstMetric(descMemberRetry, prometheus.GaugeValue, max(ms.CooldownUntil.Sub(now).Seconds(), 0), ps.ID, ms.ID)
			}
			if ms.CooldownSince != nil {
				ch <- prometheus.MustNewConstMetric(descMemberSince, prometheus.GaugeValue, float64(ms.CooldownSince.UnixMilli())/1000, ps.ID, ms.ID)
			}
		}
	}
}

func collectEngine(ch chan<- prometheus.Metric, st statusdoc.Status) {
	for _, cs := range st.Candidates {
		ch <- prometheus.MustNewConstMetric(descCooling, prometheus.GaugeValue, boolf(cs.State == statusdoc.StateCooling), cs.Candidate)
		ch <- prometheus.MustNewConstMetric(descHostCooldowns, prometheus.GaugeValue, float64(len(cs.HostCooldowns)), cs.Candidate)
		ch <- prometheus.MustNewConstMetric(descCandSuccesses, prometheus.CounterValue, float64(cs.Successes), cs.Candidate)
	}
	for _, r := range st.Health.Results {
		ch <- prometheus.MustNewConstMetric(descHealthAlive, prometheus.GaugeValue, boolf(r.Alive), r.Candidate)
		ch <- prometheus.MustNewConstMetric(descHealthEligible, prometheus.GaugeValue, boolf(r.Eligible), r.Candidate)
	}
	ch <- prometheus.MustNewConstMetric(descHealthRuns, prometheus.CounterValue, float64(st.HealthRuns))
}

func boolf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
