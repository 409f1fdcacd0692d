package candidate

import (
	"errors"
	"fmt"
)

// Tier is the reach of a cooldown (SPEC CD-1).
type Tier int

const (
	// TierNone records no cooldown: a failure after the response body
	// started streaming, or a client-side cancel.
	TierNone Tier = iota
	// TierHost cools the candidate for one destination host only: direct
	// connect failure, non-2xx CONNECT answer, TLS probe failure, response
	// header timeout, reset before the response.
	TierHost
	// TierGateway cools the gateway for every host: cannot connect to it,
	// it closes or answers garbage before a response, 407, 401 to CONNECT.
	TierGateway
)

// String is "none", "host" or "gateway", as shown in logs and status.
func (t Tier) String() string {
	switch t {
	case TierHost:
		return "host"
	case TierGateway:
		return "gateway"
	}
	return "none"
}

// PathError is the failure of one candidate in one phase. Classification for
// cooldowns reads Phase and Tier, never the error text (SPEC CD-3).
type PathError struct {
	Candidate Candidate
	Phase     Phase
	Tier      Tier
	// Status is the HTTP status a gateway answered, when the failure is an
	// answer (407, 403 to CONNECT, 502 …); 0 otherwise.
	Status int
	// Sent is true when request bytes may have reached the origin, which
	// limits replay.
	Sent bool
	Err  error
}

// Error is "PHASE via CANDIDATE: cause" with the candidate redacted.
func (e *PathError) Error() string {
	return fmt.Sprintf("%s via %s: %v", e.Phase, e.Candidate, e.Err)
}

// Unwrap returns the cause, for errors.Is and errors.As.
func (e *PathError) Unwrap() error { return e.Err }

// IsLocal reports a failure of this machine's resources (PhaseLocal: out
// of descriptors or memory), which no other candidate would do better and
// which cools nothing down (SPEC CD-1).
func IsLocal(err error) bool {
	if err == nil {
		return false // errors.As would cost an allocation for &pe
	}
	var pe *PathError
	return errors.As(err, &pe) && pe.Phase == PhaseLocal
}
