package wire

import "encoding/json"

// The request structs of the flavours, filled by the one-pass scanner
// (reqscan.go) or, when it gives up, by json.Unmarshal (decodeRequest).

// roleContent is one entry of a Messages or Chat Completions request's
// messages: the pool reads the role and keeps a view of the content.
type roleContent struct {
	Role    string  `json:"role"`
	Content rawView `json:"content"`
}

var roleContentNames = []string{"role", "content"}

// scanMessages decodes a messages array (or null) at b[i].
func scanMessages(b []byte, i, depth int, dst *[]roleContent) int {
	if isNull(b, i) {
		*dst = nil
		return i + 4
	}
	if i >= len(b) || b[i] != '[' {
		return -1
	}
	list := make([]roleContent, 0, 4)
	end := scanArray(b, i, depth, func(vs int) int {
		var m roleContent
		ve := scanStruct(b, vs, depth+1, roleContentNames, func(k, vs int) int {
			if k == 0 {
				return scanString(b, vs, &m.Role)
			}
			return scanRaw(b, vs, depth+2, &m.Content)
		})
		list = append(list, m)
		return ve
	})
	*dst = list
	return end
}

// decodeRequest fills req (a request, or an event's usage) from body: by
// scan when it can, else with json.Unmarshal (whose error is the caller's
// 400 for a request).
func decodeRequest[T any, P interface {
	*T
	scan(b []byte) bool
}](body []byte, req P) error {
	if req.scan(body) {
		return nil
	}
	*req = *new(T) // the scan may have set some fields
	return json.Unmarshal(body, req)
}

var anthropicNames = []string{"model", "stream", "max_tokens", "metadata", "output_config", "thinking", "system", "messages"}

var (
	userIDNames   = []string{"user_id"}
	effortNames   = []string{"effort"}
	thinkingNames = []string{"type", "budget_tokens"}
)

func (r *anthropicRequest) scan(b []byte) bool {
	*r = anthropicRequest{}
	return scanTop(b, anthropicNames, func(k, vs int) int {
		switch k {
		case 0:
			return scanStringPtr(b, vs, &r.Model)
		case 1:
			return scanBool(b, vs, &r.Stream)
		case 2:
			return scanInt(b, vs, &r.MaxTokens)
		case 3:
			return scanStruct(b, vs, 1, userIDNames, func(_, vs int) int { return scanString(b, vs, &r.Metadata.UserID) })
		case 4:
			return scanStruct(b, vs, 1, effortNames, func(_, vs int) int { return scanString(b, vs, &r.OutputConfig.Effort) })
		case 5:
			return scanStruct(b, vs, 1, thinkingNames, func(k, vs int) int {
				if k == 0 {
					return scanString(b, vs, &r.Thinking.Type)
				}
				return scanInt(b, vs, &r.Thinking.BudgetTokens)
			})
		case 6:
			return scanRaw(b, vs, 1, &r.System)
		}
		return scanMessages(b, vs, 1, &r.Messages)
	})
}

var chatNames = []string{"model", "stream", "max_tokens", "max_completion_tokens", "reasoning_effort", "prompt_cache_key", "messages"}

func (r *chatRequest) scan(b []byte) bool {
	*r = chatRequest{}
	return scanTop(b, chatNames, func(k, vs int) int {
		switch k {
		case 0:
			return scanStringPtr(b, vs, &r.Model)
		case 1:
			return scanBool(b, vs, &r.Stream)
		case 2:
			return scanInt(b, vs, &r.MaxTokens)
		case 3:
			return scanInt(b, vs, &r.MaxCompletionTokens)
		case 4:
			return scanString(b, vs, &r.ReasoningEffort)
		case 5:
			return scanString(b, vs, &r.PromptCacheKey)
		}
		return scanMessages(b, vs, 1, &r.Messages)
	})
}

var responsesNames = []string{"model", "stream", "max_output_tokens", "instructions", "input", "prompt_cache_key", "previous_response_id", "reasoning"}

func (r *responsesRequest) scan(b []byte) bool {
	*r = responsesRequest{}
	return scanTop(b, responsesNames, func(k, vs int) int {
		switch k {
		case 0:
			return scanStringPtr(b, vs, &r.Model)
		case 1:
			return scanBool(b, vs, &r.Stream)
		case 2:
			return scanInt(b, vs, &r.MaxOutputTokens)
		case 3:
			return scanRaw(b, vs, 1, &r.Instructions)
		case 4:
			return scanRaw(b, vs, 1, &r.Input)
		case 5:
			return scanString(b, vs, &r.PromptCacheKey)
		case 6:
			return scanString(b, vs, &r.Previous)
		}
		return scanStruct(b, vs, 1, effortNames, func(_, vs int) int { return scanString(b, vs, &r.Reasoning.Effort) })
	})
}

// The usage of Anthropic stream events (anthropicWatcher): message_start
// carries it in message.usage, message_delta at the top; scanned like a
// request, json.Unmarshal when the scan gives up (FuzzScanUsage).

var (
	messageNames = []string{"message"}
	usageNames   = []string{"usage"}
	anUsageNames = []string{"input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"}
)

// scanInt64Ptr decodes an integer literal (or null: nil) at b[i] into a
// *int64 field.
func scanInt64Ptr(b []byte, i int, dst **int64) int {
	if isNull(b, i) {
		*dst = nil
		return i + 4
	}
	var n int
	end := scanInt(b, i, &n)
	if end >= 0 {
		v := int64(n)
		*dst = &v
	}
	return end
}

func (u *anthropicUsage) scanAt(b []byte, i, depth int) int {
	return scanStruct(b, i, depth, anUsageNames, func(k, vs int) int {
		return scanInt64Ptr(b, vs, [...]**int64{&u.Input, &u.Output, &u.CacheRead, &u.CacheCreation}[k])
	})
}

// startUsage is message_start's data: {"message": {"usage": {…}}}.
type startUsage struct {
	Message struct {
		Usage anthropicUsage `json:"usage"`
	} `json:"message"`
}

func (v *startUsage) scan(b []byte) bool {
	*v = startUsage{}
	return scanTop(b, messageNames, func(_, vs int) int {
		return scanStruct(b, vs, 1, usageNames, func(_, vs int) int { return v.Message.Usage.scanAt(b, vs, 2) })
	})
}

// deltaUsage is message_delta's data: {"usage": {…}}.
type deltaUsage struct {
	Usage anthropicUsage `json:"usage"`
}

func (v *deltaUsage) scan(b []byte) bool {
	*v = deltaUsage{}
	return scanTop(b, usageNames, func(_, vs int) int { return v.Usage.scanAt(b, vs, 1) })
}
