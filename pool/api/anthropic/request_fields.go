package anthropic

import (
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

var anthropicNames = []string{"model", "stream", "max_tokens", "metadata", "output_config", "thinking", "system", "messages"}

func (r *anthropicRequest) Scan(b []byte) bool {
	*r = anthropicRequest{}
	return wirefmt.ScanTopAt(b, anthropicNames, func(k, vs int) int {
		switch k {
		case 0:
			return wirefmt.ScanStringPtrAt(b, vs, &r.Model)
		case 1:
			return wirefmt.ScanBool(b, vs, &r.Stream)
		case 2:
			return wirefmt.ScanInt(b, vs, &r.MaxTokens)
		case 3:
			return wirefmt.ScanStruct(b, vs, 1, wirefmt.UserIDNames, func(_, vs int) int { return wirefmt.ScanStringAt(b, vs, &r.Metadata.UserID) })
		case 4:
			return wirefmt.ScanStruct(b, vs, 1, wirefmt.EffortNames, func(_, vs int) int { return wirefmt.ScanStringAt(b, vs, &r.OutputConfig.Effort) })
		case 5:
			return wirefmt.ScanStruct(b, vs, 1, wirefmt.ThinkingNames, func(k, vs int) int {
				if k == 0 {
					return wirefmt.ScanStringAt(b, vs, &r.Thinking.Type)
				}
				return wirefmt.ScanInt(b, vs, &r.Thinking.BudgetTokens)
			})
		case 6:
			return wirefmt.ScanRawAt(b, vs, 1, &r.System)
		}
		return wirefmt.ScanMessages(b, vs, 1, &r.Messages)
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

func (u *anthropicUsage) scanAt(b []byte, i, depth int) int {
	return wirefmt.ScanStruct(b, i, depth, anUsageNames, func(k, vs int) int {
		return wirefmt.ScanInt64Ptr(b, vs, [...]**int64{&u.Input, &u.Output, &u.CacheRead, &u.CacheCreation}[k])
	})
}

// startUsage is message_start's data: {"message": {"usage": {…}}}.
type startUsage struct {
	Message struct {
		Usage anthropicUsage `json:"usage"`
	} `json:"message"`
}

func (v *startUsage) Scan(b []byte) bool {
	*v = startUsage{}
	return wirefmt.ScanTopAt(b, messageNames, func(_, vs int) int {
		return wirefmt.ScanStruct(b, vs, 1, usageNames, func(_, vs int) int { return v.Message.Usage.scanAt(b, vs, 2) })
	})
}

// deltaUsage is message_delta's data: {"usage": {…}}.
type deltaUsage struct {
	Usage anthropicUsage `json:"usage"`
}

func (v *deltaUsage) Scan(b []byte) bool {
	*v = deltaUsage{}
	return wirefmt.ScanTopAt(b, usageNames, func(_, vs int) int { return v.Usage.scanAt(b, vs, 1) })
}
