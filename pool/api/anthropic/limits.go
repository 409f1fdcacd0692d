package anthropic

import (
	"encoding/json"

	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

// LowerLimit returns body with max_tokens above limit (tokens) set to limit,
// every other byte as the client sent it (SPEC POOL-25). A thinking
// budget_tokens is kept below the new max_tokens as Anthropic requires
// ("Extended thinking"), and thinking is disabled when that leaves less than
// its minimum of 1024 tokens. A body without such a field is returned as is.
func (Flavour) LowerLimit(body []byte, limit int) []byte {
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
}

// minThinkingBudget is Anthropic's smallest budget_tokens.
const minThinkingBudget = 1024
