package proxy

import (
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

// traffic holds the counters of an engine; the slice is aligned with
// Config.Candidates, which never change after NewEngine.
type traffic struct {
	open     atomic.Int64
	httpDown atomic.Uint64 // plain-HTTP response body bytes sent to clients
	cands    []candTraffic
}

// Traffic is a snapshot of the traffic counters.
type Traffic struct {
	// OpenTunnels is the number of CONNECT tunnels relaying right now.
	OpenTunnels int64
	// Candidates holds, per configured candidate in order, the bytes
	// relayed through finished tunnels: Up from the client to the
	// destination, Down back. A tunnel's bytes are added when it ends.
	Candidates []CandidateTraffic
	// HTTPResponseBytes counts the plain-HTTP response body bytes sent to
	// clients (every candidate).
	HTTPResponseBytes uint64
}

// CandidateTraffic is one candidate's tunnel byte totals.
type CandidateTraffic struct {
	Candidate string // redacted, as in the status document
	Up, Down  uint64 // bytes
}

// Traffic returns the current tunnel counters.
func (e *Engine) Traffic() Traffic {
	t := Traffic{OpenTunnels: e.traffic.open.Load(), Candidates: make([]CandidateTraffic, len(e.cfg.Candidates)), HTTPResponseBytes: e.traffic.httpDown.Load()}
	for i, c := range e.cfg.Candidates {
		t.Candidates[i] = CandidateTraffic{Candidate: c.String(), Up: e.traffic.cands[i].up.Load(), Down: e.traffic.cands[i].down.Load()}
	}
	return t
}

// countTunnel adds a finished tunnel's bytes to candidate c.
func (e *Engine) countTunnel(c candidate.Candidate, up, down int64) {
	k := c.Key()
	for i := range e.cfg.Candidates {
		if e.cfg.Candidates[i].Key() == k {
			e.traffic.cands[i].up.Add(uint64(max(up, 0)))
			e.traffic.cands[i].down.Add(uint64(max(down, 0)))
			return
		}
	}
}
