//go:build !unix

package upstream

import (
	"io"

	"github.com/dual-proxy/dual-proxy/proxy/candidate"
)

// await is the per-connection state of quiet's socket check.
type await struct {
	peek sockPeek
}

// send is sendPlain here: without a read(2) on the descriptor the check
// before a reused connection's request is quiet's own (FIONREAD on
// Windows), and the answer is read by conn.Read.
func (uc *upConn) send(c *Client, check bool, cand candidate.Candidate, r *Request, body io.Reader) (quiet bool, werr error) {
	return uc.sendPlain(c, check, cand, r, body)
}

// rawRead is never called here (connReader.raw is set by send on Unix only).
func rawRead(uintptr, []byte) (int, error) { return 0, io.ErrNoProgress }
