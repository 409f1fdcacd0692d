package config

import "time"

// Failure classes. ClassNetwork (connect/reset/early close)
// and ClassModelNotFound (one member misconfigured) refine "server" and
// "bad_request" so logs and status say what happened.
const (
	ClassAuth          = "auth"
	ClassQuota         = "quota"
	ClassRateLimit     = "rate_limit"
	ClassServer        = "server"
	ClassTimeout       = "timeout"
	ClassEmpty         = "empty"
	ClassNetwork       = "network"
	ClassBadRequest    = "bad_request"
	ClassModelNotFound = "model_not_found"
)

// ClassState is a member's 400 about state it cannot read (another
// member's previous_response_id or encrypted content): not the
// member's fault and not the caller's; no cooldown, the next member is tried.
const ClassState = "state"

// Base is the configured cooldown of a class; 0 for
// bad_request and unknown classes (no cooldown).
func (c CooldownConfig) Base(class string) time.Duration {
	switch class {
	case ClassAuth:
		return c.Auth
	case ClassQuota:
		return c.Quota
	case ClassRateLimit:
		return c.RateLimit
	case ClassServer:
		return c.Server
	case ClassTimeout:
		return c.Timeout
	case ClassEmpty:
		return c.Empty
	case ClassNetwork:
		return c.Network
	case ClassModelNotFound:
		return c.ModelNotFound
	}
	return 0
}
