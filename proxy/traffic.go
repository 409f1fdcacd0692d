package proxy

import (
	"sync"
	"sync/atomic"

	"github.com/dual-proxy/dual-proxy/proxy/candidate"
)

// Tunnel traffic counters for the metrics (SPEC OPS-5). They sit beside the
// relay, not inside it: one atomic add per direction when a tunnel ends and
// two per tunnel for the open count, so the byte path (io.Copy, splice(2) on
// Linux) is untouched.

// candTraffic counts one candidate's tunnel bytes.
type candTraffic struct {
	up, down atomic.Uint64
}

// traffic holds the counters of an engine, per candidate key: a candidate
// removed by a change keeps its totals (counters never go down) and shows
// again if it comes back (SPEC OPS-7).
type traffic struct {
	open     atomic.Int64
	httpDown atomic.Uint64               // plain-HTTP response body bytes sent to clients
	notHTTP  [notHTTPKinds]atomic.Uint64 // refused non-HTTP clients by kind (nothttp.go)
	mu       sync.Mutex                  // guards cands (one lookup per finished tunnel)
	cands    map[string]*candTraffic
}

// of returns the counters of candidate key, made on first use.
func (t *traffic) of(key string) *candTraffic {
	t.mu.Lock()
	defer t.mu.Unlock()
	ct := t.cands[key]
	if ct == nil {
		ct = &candTraffic{}
		t.cands[key] = ct
	}
	return ct
}

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
	// their first byte could not start a request line (SPEC HTTP-5d).
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
	t := Traffic{OpenTunnels: e.traffic.open.Load(), Candidates: make([]CandidateTraffic, len(cands)), HTTPResponseBytes: e.traffic.httpDown.Load(),
		NotHTTP: NotHTTP{TLS: e.traffic.notHTTP[notHTTPTLS].Load(), SOCKS: e.traffic.notHTTP[notHTTPSOCKS].Load(), Other: e.traffic.notHTTP[notHTTPOther].Load()}}
	for i, c := range cands {
		ct := e.traffic.of(c.Key())
		t.Candidates[i] = CandidateTraffic{Candidate: c.String(), Up: ct.up.Load(), Down: ct.down.Load()}
	}
	return t
}

// countTunnel adds a finished tunnel's bytes to candidate c.
func (e *Engine) countTunnel(c candidate.Candidate, up, down int64) {
	ct := e.traffic.of(c.Key())
	ct.up.Add(uint64(max(up, 0)))
	ct.down.Add(uint64(max(down, 0)))
}
