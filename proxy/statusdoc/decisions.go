package statusdoc

import (
	"errors"
	"sync"
	"time"

	"github.com/dual-proxy/dual-proxy/proxy/candidate"
)

// maxDecisions is how many recent decisions the engine keeps.
const maxDecisions = 200

// Failure is one failed attempt inside a Decision: redacted candidate,
// phase and reason. It never holds paths, headers or credentials.
type Failure struct {
	Candidate string `json:"candidate"`
	Phase     string `json:"phase"`
	Tier      string `json:"tier"`
	Status    int    `json:"status,omitempty"`
	Reason    string `json:"reason"`
}

// Decision records how one request or tunnel was routed: the
// destination host (never the path), the candidate that served it ("" when
// all failed), the attempts that failed first, and the latency to an open
// path or response header in ms.
type Decision struct {
	Time      time.Time `json:"time"`
	Kind      string    `json:"kind"` // "connect" or "http"
	Host      string    `json:"host"`
	Candidate string    `json:"candidate,omitempty"`
	Failed    []Failure `json:"failed,omitempty"`
	LatencyMS float64   `json:"latency_ms"`
	Error     string    `json:"error,omitempty"`
	// Caller is who sent a request through the engine's Go API, when it
	// reports the outcome itself: "pool" for a model pool's member call
	// (its own log line and failover speak for a failure); "" for the
	// proxy's clients.
	Caller string `json:"caller,omitempty"`
}

// Log is a fixed-size ring of the last 200 decisions with
// subscribers. The zero value is ready; safe for concurrent use.
type Log struct {
	mu   sync.Mutex
	ring [maxDecisions]Decision
	next int
	n    int
	subs []func(Decision)
}

// Add records d and calls every subscriber with it (on the caller's
// goroutine, after the lock is released).
func (l *Log) Add(d Decision) {
	l.mu.Lock()
	l.ring[l.next] = d
	l.next = (l.next + 1) % maxDecisions
	if l.n < maxDecisions {
		l.n++
	}
	subs := l.subs
	l.mu.Unlock()
	for _, f := range subs {
		f(d)
	}
}

// Snapshot returns the decisions, oldest first.
func (l *Log) Snapshot() []Decision {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Decision, 0, l.n)
	start := (l.next - l.n + maxDecisions) % maxDecisions
	for i := 0; i < l.n; i++ {
		out = append(out, l.ring[(start+i)%maxDecisions])
	}
	return out
}

// Failures converts attempt errors into Failure records: a *candidate.PathError
// gives candidate, phase, tier, status and reason; any other error only its
// text.
func Failures(errs []error) []Failure {
	var out []Failure
	for _, err := range errs {
		var pe *candidate.PathError
		if errors.As(err, &pe) {
			out = append(out, Failure{Candidate: pe.Candidate.String(), Phase: string(pe.Phase), Tier: pe.Tier.String(), Status: pe.Status, Reason: pe.Err.Error()})
			continue
		}
		out = append(out, Failure{Reason: err.Error()})
	}
	return out
}

// Subscribe registers f to be called after every Add (f must not block).
func (l *Log) Subscribe(f func(Decision)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.subs = append(append([]func(Decision){}, l.subs...), f)
}
