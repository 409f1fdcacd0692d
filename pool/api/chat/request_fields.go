package chat

import (
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

var chatNames = []string{"model", "stream", "max_tokens", "max_completion_tokens", "reasoning_effort", "prompt_cache_key", "messages"}

func (r *chatCall) Scan(b []byte) bool {
	*r = chatCall{}
	return wirefmt.ScanTopAt(b, chatNames, func(k, vs int) int {
		switch k {
		case 0:
			return wirefmt.ScanStringPtrAt(b, vs, &r.Model)
		case 1:
			return wirefmt.ScanBool(b, vs, &r.Stream)
		case 2:
			return wirefmt.ScanInt(b, vs, &r.MaxTokens)
		case 3:
			return wirefmt.ScanInt(b, vs, &r.MaxCompletionTokens)
		case 4:
			return wirefmt.ScanStringAt(b, vs, &r.ReasoningEffort)
		case 5:
			return wirefmt.ScanStringAt(b, vs, &r.PromptCacheKey)
		}
		return wirefmt.ScanMessages(b, vs, 1, &r.Messages)
	})
}
