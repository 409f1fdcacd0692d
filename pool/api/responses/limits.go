package responses

import "github.com/dual-proxy/dual-proxy/pool/api/wirefmt"

// LowerLimit returns body with max_output_tokens above limit (tokens) set
// to limit, every other byte as the client sent it (SPEC POOL-25).
func (Flavour) LowerLimit(body []byte, limit int) []byte {
	return wirefmt.LowerField(body, "max_output_tokens", limit)
}
