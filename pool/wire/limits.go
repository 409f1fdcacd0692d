package wire

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/dual-proxy/dual-proxy/pool/apikind"
	"github.com/dual-proxy/dual-proxy/pool/internal/jsonscan"
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
		out := lowerField(body, "max_tokens", limit)
		if th, ok := topValue(out, "thinking"); ok {
			var t struct {
				Type         string `json:"type"`
				BudgetTokens int    `json:"budget_tokens"`
			}
			if json.Unmarshal(th, &t) == nil && t.Type == "enabled" && t.BudgetTokens >= limit {
				nt := []byte(`{"type":"disabled"}`)
				if limit-1 >= minThinkingBudget {
					nt = lowerField(th, "budget_tokens", limit-1)
				}
				out, _ = spliceTopLevel(out, "thinking", nt)
			}
		}
		return out
	case apikind.Chat:
		return lowerField(lowerField(body, "max_tokens", limit), "max_completion_tokens", limit)
	case apikind.Responses:
		return lowerField(body, "max_output_tokens", limit)
	case apikind.Gemini:
		if gc, ok := topValue(body, "generationConfig"); ok {
			if out, ok := spliceTopLevel(body, "generationConfig", lowerField(gc, "maxOutputTokens", limit)); ok {
				return out
			}
		}
	}
	return body
}

// minThinkingBudget is Anthropic's smallest budget_tokens.
const minThinkingBudget = 1024

// lowerField sets the number at key of the JSON object obj to limit when
// it is above it; obj as is otherwise.
func lowerField(obj []byte, key string, limit int) []byte {
	v, ok := topValue(obj, key)
	if !ok {
		return obj
	}
	var n float64
	if json.Unmarshal(v, &n) != nil || n <= float64(limit) {
		return obj
	}
	out, _ := spliceTopLevel(obj, key, []byte(strconv.Itoa(limit)))
	return out
}

// topValue is the value of key in the top-level JSON object b, matched as
// spliceTopLevel matches it.
func topValue(b []byte, key string) (v []byte, ok bool) {
	jsonscan.EachMember(b, func(k string, vs, ve int) bool {
		if strings.EqualFold(k, key) {
			v, ok = b[vs:ve], true
			return false
		}
		return true
	})
	return v, ok
}
