package engine

import (
	"sync"
	"sync/atomic"

	"github.com/dual-proxy/dual-proxy/proxy/candidate"
)

// Tunnel traffic counters for the metrics. They sit beside the
// relay, not inside it: one atomic add per direction when a tunnel ends and
// two per tunnel for the open count, so the byte path (io.Copy, splice(2) on
// Linux) is untouched.

// candTraffic counts one candidate's tunnel bytes.
type candTraffic struct {
	up, down atomic.Uint64
}

// Counters are the traffic counters of an engine (SPEC OPS-5), which the front end
// adds to as it serves and Traffic reads. Per-candidate tunnel bytes are
// kept per candidate key: a candidate removed by a change keeps its totals
// (counters never go down, or a rate() would see a reset) and shows again
// if it comes back.
type Counters struct {
	// OpenTunnels is the number of tunnels relaying right now (add 1 before
	// the client sees the 200, -1 when the tunnel ends).
	OpenTunnels atomic.Int64
	// HTTPResponseBytes is the plain-HTTP response body bytes sent to clients.
	HTTPResponseBytes atomic.Uint64
	// NotHTTP counts refused non-HTTP clients by kind (NotHTTPTLS…).
	NotHTTP [NotHTTPKinds]atomic.Uint64

	mu    sync.Mutex // guards cands (one lookup per finished tunnel)
	cands map[string]*candTraffic
}

// Kinds of non-HTTP first bytes, the indexes of Counters.NotHTTP.
const (
	NotHTTPTLS   = iota // 0x16: a TLS handshake
	NotHTTPSOCKS        // 0x04 or 0x05: a SOCKS client
	NotHTTPOther        // any other byte no request line starts with
	NotHTTPKinds
)

// of returns the counters of candidate key, made on first use.
func (t *Counters) of(key string) *candTraffic {
	t.mu.Lock()
	defer t.mu.Unlock()
	ct := t.cands[key]
	if ct == nil {
		ct = &candTraffic{}
		t.cands[key] = ct
	}
	return ct
}

// Tunnel adds the bytes of a finished tunnel through c: up from the
// client to the destination, down back (negative counts as 0).
func (t *Counters) Tunnel(c candidate.Candidate, up, down int64) {
	ct := t.of(c.Key())
	ct.up.Add(uint64(max(up, 0)))
	ct.down.Add(uint64(max(down, 0)))
}

// Counters returns the engine's traffic counters, for the front end to add to.
func (e *Engine) Counters() *Counters { return &e.counters }

// Traffic is a snapshot of the traffic counters.
type Traffic struct {
	// OpenTunnels is the number of CONNECT tunnels relaying right now.
	OpenTunnels int64
	// Candidates holds, per candidate configured now, in order, the bytes
	// relayed through finished tunnels: Up from the client to the
	// destination, Down back. A tunnel's bytes are added when it ends.
	Candidates []CandidateTraffic
	// HTTPResponseBytes counts the plain-HTTP response body bytes sent to
	// clients (every candidate).
	HTTPResponseBytes uint64
	// NotHTTP counts the client connections refused with 400 because
	// their first byte could not start a request line (head.go).
	NotHTTP NotHTTP
}

// NotHTTP counts refused non-HTTP clients by what their first byte
// suggests they speak.
type NotHTTP struct {
	TLS   uint64 // 0x16: a TLS handshake (an https:// proxy URL)
	SOCKS uint64 // 0x04 or 0x05: a SOCKS client
	Other uint64 // any other byte that no request line starts with
}

// CandidateTraffic is one candidate's tunnel byte totals.
type CandidateTraffic struct {
	Candidate string // redacted, as in the status document
	Up, Down  uint64 // bytes
}

// Traffic returns the current tunnel counters.
func (e *Engine) Traffic() Traffic {
	cands := e.live.Load().cfg.Candidates
	t := Traffic{OpenTunnels: e.counters.OpenTunnels.Load(), Candidates: make([]CandidateTraffic, len(cands)), HTTPResponseBytes: e.counters.HTTPResponseBytes.Load(),
		NotHTTP: NotHTTP{TLS: e.counters.NotHTTP[NotHTTPTLS].Load(), SOCKS: e.counters.NotHTTP[NotHTTPSOCKS].Load(), Other: e.counters.NotHTTP[NotHTTPOther].Load()}}
	for i, c := range cands {
		ct := e.counters.of(c.Key())
		t.Candidates[i] = CandidateTraffic{Candidate: c.String(), Up: ct.up.Load(), Down: ct.down.Load()}
	}
	return t
}
