package api

import (
	"encoding/json"

	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
)

// LowerLimit returns body, a request of API api, with each output limit
// above limit (tokens) set to limit, every other byte as the client sent it
// (SPEC POOL-25): Anthropic max_tokens, Chat max_tokens and
// max_completion_tokens, Responses max_output_tokens, Gemini
// generationConfig.maxOutputTokens. An Anthropic thinking budget_tokens is
// kept below the new max_tokens as Anthropic requires ("Extended
// thinking"), and thinking is disabled when that leaves less than its
// minimum of 1024 tokens. A body without such a field is returned as is.
func LowerLimit(api apikind.Kind, body []byte, limit int) []byte {
	switch api {
	case apikind.Anthropic:
		out := wirefmt.LowerField(body, "max_tokens", limit)
		if th, ok := wirefmt.TopValue(out, "thinking"); ok {
			var t struct {
				Type         string `json:"type"`
				BudgetTokens int    `json:"budget_tokens"`
			}
			if json.Unmarshal(th, &t) == nil && t.Type == "enabled" && t.BudgetTokens >= limit {
				nt := []byte(`{"type":"disabled"}`)
				if limit-1 >= minThinkingBudget {
					nt = wirefmt.LowerField(th, "budget_tokens", limit-1)
				}
				out, _ = wirefmt.SpliceTopLevel(out, "thinking", nt)
			}
		}
		return out
	case apikind.Chat:
		return wirefmt.LowerField(wirefmt.LowerField(body, "max_tokens", limit), "max_completion_tokens", limit)
	case apikind.Responses:
		return wirefmt.LowerField(body, "max_output_tokens", limit)
	case apikind.Gemini:
		if gc, ok := wirefmt.TopValue(body, "generationConfig"); ok {
			if out, ok := wirefmt.SpliceTopLevel(body, "generationConfig", wirefmt.LowerField(gc, "maxOutputTokens", limit)); ok {
				return out
			}
		}
	}
	return body
}

// minThinkingBudget is Anthropic's smallest budget_tokens.
const minThinkingBudget = 1024
