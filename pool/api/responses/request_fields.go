package responses

import (
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

var responsesNames = []string{"model", "stream", "max_output_tokens", "instructions", "input", "prompt_cache_key", "previous_response_id", "reasoning"}

func (r *responsesRequest) Scan(b []byte) bool {
	*r = responsesRequest{}
	return wirefmt.ScanTopAt(b, responsesNames, func(k, vs int) int {
		switch k {
		case 0:
			return wirefmt.ScanStringPtrAt(b, vs, &r.Model)
		case 1:
			return wirefmt.ScanBool(b, vs, &r.Stream)
		case 2:
			return wirefmt.ScanInt(b, vs, &r.MaxOutputTokens)
		case 3:
			return wirefmt.ScanRawAt(b, vs, 1, &r.Instructions)
		case 4:
			return wirefmt.ScanRawAt(b, vs, 1, &r.Input)
		case 5:
			return wirefmt.ScanStringAt(b, vs, &r.PromptCacheKey)
		case 6:
			return wirefmt.ScanStringAt(b, vs, &r.Previous)
		}
		return wirefmt.ScanStruct(b, vs, 1, wirefmt.EffortNames, func(_, vs int) int { return wirefmt.ScanStringAt(b, vs, &r.Reasoning.Effort) })
	})
}
