// Package statusdoc is the vocabulary of the proxy's status document: the
// Status served as JSON, the recent routing decisions (a fixed ring, Log), and
// the handler serving the document and the self-contained status page. It reads
// no engine state itself; proxy.Engine.Status fills the document.
package statusdoc

import "time"

// Candidate states in Status: the page, the JSON and
// the status command show the same word.
const (
	// StateHot: no gateway-wide cooldown, and proved: a success, or a
	// passing health check; the candidate is in the hot zone for every host
	// without a host-scoped cooldown.
	StateHot = "hot"
	// StateCooling: a gateway-wide cooldown is running; the candidate is in
	// the cold zone for every host until CandidateStatus.Until.
	StateCooling = "cooling"
	// StateFailing: no cooldown runs, but the last health check through
	// the candidate failed while another path passed it.
	StateFailing = "failing"
	// StateUntried: no cooldown runs and nothing proves the candidate yet:
	// no success and no passing health check (a dead gateway nobody tried
	// is not hot).
	StateUntried = "untried"
)

// Status is the proxy's state as served by GET /_dual-proxy/status (SPEC
// OPS-2). It holds host names, redacted candidates (Candidate.String: never
// a password), phases and reasons — never request paths, query strings,
// headers, bodies or credentials. Times are absolute (RFC 3339 in JSON);
// every *RemainingMS is counted from Now, in ms.
type Status struct {
	// Listeners are the addresses the server accepts on ("127.0.0.1:7898");
	// empty when the status comes from Engine.Status.
	Listeners []string `json:"listeners"`
	// Now is the engine's clock (Config.Now) when the status was taken.
	Now time.Time `json:"now"`
	// Settings are the proxy settings in effect, as
	// Config.Settings gives them: keyed by the settings' names (the long
	// flag names, "cooldown-ms"), each value in its unit (ms for a
	// "-ms" key; 0 and '' mean what they mean on the command line,
	// docs/flags.md), credentials masked. Empty when the engine was given
	// none (the Go API).
	Settings map[string]any `json:"settings"`
	// Candidates in default order, direct last.
	Candidates []CandidateStatus `json:"candidates"`
	Health     HealthStatus      `json:"health"`
	// Cache holds the live per-host cache entries, most recently used
	// first.
	Cache []CacheStatus `json:"cache"`
	// Decisions are the last (at most 200) routing decisions, oldest first.
	Decisions []Decision `json:"decisions"`
	// TLSProbes counts TLS handshake probes started.
	TLSProbes int64 `json:"tls_probes"`
	// HealthRuns counts health checks started.
	HealthRuns int `json:"health_runs"`
}

// CandidateStatus is one candidate's state: its cooldowns and last failure.
type CandidateStatus struct {
	// Candidate is the redacted display form ("http://user:***@host:port").
	Candidate string `json:"candidate"`
	// Key is the identity used by cache, cooldowns and health ("direct" or
	// "host:port"); it never holds credentials.
	Key string `json:"key"`
	// Kind is "direct", "http", "https", "socks5" or "socks5h".
	Kind   string `json:"kind"`
	Source string `json:"source"`
	// State is StateCooling (gateway-wide cooldown), StateFailing (its
	// health check failed where another path passed), StateUntried
	// (nothing proves it yet) or StateHot. Failing and untried candidates
	// are still in the hot zone of the selection order.
	State string `json:"state"`
	// Until is the end of the gateway-wide cooldown; zero when hot.
	Until       time.Time `json:"until,omitzero"`
	RemainingMS int64     `json:"remaining_ms,omitempty"`
	// HostCooldowns are the running host-scoped cooldowns, by host.
	HostCooldowns []HostCooldownStatus `json:"host_cooldowns,omitempty"`
	// LastFailure is the latest failure of this candidate; nil when none.
	LastFailure *FailureStatus `json:"last_failure,omitempty"`
	Successes   uint64         `json:"successes"`
	Failures    uint64         `json:"failures"`
	// Preferred marks the health-preferred candidate.
	Preferred bool `json:"preferred"`
}

// HostCooldownStatus is one host-scoped cooldown.
type HostCooldownStatus struct {
	Host        string    `json:"host"`
	Until       time.Time `json:"until"`
	RemainingMS int64     `json:"remaining_ms"`
	Phase       string    `json:"phase"`
	Reason      string    `json:"reason,omitempty"`
}

// FailureStatus describes a candidate's last failure.
type FailureStatus struct {
	Time   time.Time `json:"time"`
	Phase  string    `json:"phase"`
	Tier   string    `json:"tier"` // "gateway", "host" or "none"
	Reason string    `json:"reason"`
}

// HealthStatus is the health check state.
type HealthStatus struct {
	// Enabled reports whether a health URL is configured.
	Enabled bool `json:"enabled"`
	// Origin is the health URL's scheme://host[:port]; its path and query
	// are not shown.
	Origin     string `json:"origin,omitempty"`
	IntervalMS int64  `json:"interval_ms"`
	// Preferred is the redacted health-preferred candidate; "" for none.
	Preferred string    `json:"preferred"`
	LastRun   time.Time `json:"last_run,omitzero"`
	// Results are the last run's results, in the order checked.
	Results []HealthResultStatus `json:"results"`
	// TargetDown: the last run checked two or more paths and the health
	// URL failed on every one: the target is down or unreachable from
	// here, not the paths, and no path is shown failing for it.
	TargetDown bool `json:"target_down,omitempty"`
}

// HealthResultStatus is one candidate's result in the last health run,
// with its hysteresis state.
type HealthResultStatus struct {
	Candidate string `json:"candidate"`
	Alive     bool   `json:"alive"`
	Reason    string `json:"reason,omitempty"`
	Streak    int    `json:"streak"`
	Eligible  bool   `json:"eligible"`
}

// CacheStatus is one per-host cache entry.
type CacheStatus struct {
	Host        string    `json:"host"`
	Candidate   string    `json:"candidate"`
	Expires     time.Time `json:"expires"`
	RemainingMS int64     `json:"remaining_ms"`
}
