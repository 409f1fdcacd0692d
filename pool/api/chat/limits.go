package chat

import "github.com/dual-proxy/dual-proxy/pool/api/wirefmt"

// LowerLimit returns body with max_tokens and max_completion_tokens above
// limit (tokens) set to limit, every other byte as the client sent it (SPEC
// POOL-25).
func (Flavour) LowerLimit(body []byte, limit int) []byte {
	return wirefmt.LowerField(wirefmt.LowerField(body, "max_tokens", limit), "max_completion_tokens", limit)
}
