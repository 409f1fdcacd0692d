package balance

import (
	"strings"

	"github.com/dual-proxy/dual-proxy/pool/config"
)

// errorRule is one row of the classification table: an upstream error answer
// whose status is in statuses (nil: any 4xx) and whose error type, code or
// message contains one of words (lower case) is of class class. Rows are tried
// in order; the first match wins; no match falls back to the status alone
// (ClassifyStatus).
type errorRule struct {
	statuses []int
	words    []string
	class    string
}

// errorRules is the one classification table. The wordings are what
// channels send (quoted in pool/README.md "Failure classes", one test row
// each in pool/realclassify_test.go):
//
//   - the caller's parameter errors come first, so a parameter whose name
//     happens to hold a quota word ("billing_address") stays the caller's;
//   - quota and billing exhaustion arrives as 400, 402, 403 or 429 with a
//     message (Anthropic "Your credit balance is too low…", "You have
//     reached your specified API usage limits…"; OpenAI
//     "insufficient_quota", "billing_hard_limit_reached"; DeepSeek 402
//     "Insufficient Balance"; OpenRouter 402 "Insufficient credits";
//     one-api/new-api "insufficient_user_quota"; Zhipu 1113 "余额不足");
//   - on 403 and 429 the single words quota, billing, balance, credit and
//     insufficient are enough (the rule before the table).
var errorRules = []errorRule{
	{statuses: []int{400, 404}, class: config.ClassState, words: []string{
		"previous_response_not_found", "previous response with id", "invalid_encrypted_content",
		"encrypted content", "could not be decrypted", "conversation with id", "conversation_not_found",
		"item with id", "item_not_found",
		// A reasoning signature another provider account minted: Anthropic
		// "messages.N.content.M: Invalid `signature` in `thinking` block" (and the data
		// of redacted_thinking), Gemini "Corrupted thought signature.".
		"invalid `signature`", "invalid `data` in `redacted_thinking`", "corrupted thought signature",
	}},
	{statuses: []int{400, 404, 409, 413, 422}, class: config.ClassBadRequest, words: []string{
		"unsupported parameter", "unsupported_parameter", "unknown parameter", "unknown_parameter",
		"unrecognized request argument", "invalid parameter", "invalid_parameter", "unsupported value",
		"unsupported_value", "extra inputs are not permitted", "field required", "is not supported with this model",
	}},
	{statuses: []int{400, 401, 402, 403, 404, 429}, class: config.ClassQuota, words: []string{
		"credit balance", "insufficient_quota", "insufficient quota", "exceeded your current quota",
		"quota exceeded", "quota_exceeded", "exceeded_current_quota", "billing", "insufficient balance",
		"insufficient_balance", "insufficient credit", "insufficient funds", "usage limit", "spend limit",
		"spending limit", "plan limit", "insufficient_user_quota", "quota is not enough", "out of credits",
		"payment required", "arrearage", "余额不足", "额度不足", "欠费",
	}},
	{statuses: []int{403, 429}, class: config.ClassQuota, words: []string{"quota", "billing", "insufficient", "balance", "credit"}},
}

// matchRule returns the class of the first row matching status and the
// lower-cased "type message" text, or "".
func matchRule(status int, lower string) string {
	for _, r := range errorRules {
		if !statusIn(status, r.statuses) {
			continue
		}
		for _, w := range r.words {
			if strings.Contains(lower, w) {
				return r.class
			}
		}
	}
	return ""
}

func statusIn(status int, set []int) bool {
	if set == nil {
		return status >= 400 && status < 500
	}
	for _, s := range set {
		if s == status {
			return true
		}
	}
	return false
}
