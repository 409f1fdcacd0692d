package pool

import (
	"github.com/dual-proxy/dual-proxy/pool/api"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// memberLimit is member m's output limit for this call's model (tokens), 0
// when its channel and the unified model declare none (SPEC POOL-25).
func (c *call) memberLimit(m string) int {
	return config.MemberMaxTokens(c.cfg, c.pc, c.um, c.ci.Model, m)
}

// outputLimit is the output limit sent to a member whose declared limit is
// limit, for a client that asked for asked (0: named none): the member's
// when the client named none or more, else the client's. 0
// means the API's default (the translate encoders: Anthropic
// 32000, the max_tokens its API requires, the others none).
func outputLimit(asked, limit int) int {
	if limit > 0 && (asked == 0 || asked > limit) {
		return limit
	}
	return asked
}

// passthroughLimit lowers the output limit of a same-API body for member m
// when the client asked for more than m declares; a client
// that named none keeps its API's default there.
func (c *call) passthroughLimit(m string, body []byte) []byte {
	if limit := c.memberLimit(m); limit > 0 && c.ci.MaxTokens > limit {
		return api.LowerLimit(c.fl.API(), body, limit)
	}
	return body
}
