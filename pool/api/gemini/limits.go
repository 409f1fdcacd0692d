package gemini

import "github.com/dual-proxy/dual-proxy/pool/api/wirefmt"

// LowerLimit returns body with generationConfig.maxOutputTokens above limit
// (tokens) set to limit, every other byte as the client sent it (SPEC
// POOL-25).
func (Flavour) LowerLimit(body []byte, limit int) []byte {
	if gc, ok := wirefmt.TopValue(body, "generationConfig"); ok {
		if out, ok := wirefmt.SpliceTopLevel(body, "generationConfig", wirefmt.LowerField(gc, "maxOutputTokens", limit)); ok {
			return out
		}
	}
	return body
}
