package pool

import (
	"slices"

	"github.com/dual-proxy/dual-proxy/pool/api/responses"
)

// Stateful APIs across members. The Responses API carries
// state only the member (upstream account) that produced it can read:
// previous_response_id names a response stored there, and reasoning items
// with encrypted_content decrypt only there. The pool's rule:
//
//   - previous_response_id: the call goes to the member that produced that
//     response when it is hot (the state cannot be carried elsewhere;
//     stripping it would silently drop the conversation). When that member
//     fails, the others are tried as usual; one that answers "previous
//     response not found" is class state: no cooldown, the next member is
//     tried, and if none can continue the client gets the aggregated error
//     (the transient status of the owner's failure), not a 400 from a member
//     that never held the state. Once the owner recovers, the session is
//     back on it.
//   - conversation and item_reference inputs (stored on the member that
//     made them, like previous_response_id): a call without
//     previous_response_id goes to the member that holds its conversation,
//     else the one that produced its first referenced item; a member's
//     "conversation/item with id … not found" is class state the same way.
//     Ownership comes from the answers (a response's id, conversation and
//     output item ids) and from a call that succeeded with them.
//   - encrypted reasoning items (Codex: store false, include
//     reasoning.encrypted_content, the whole history resent each turn):
//     each member receives the request without the reasoning items another
//     member produced (the model loses that earlier reasoning, never the
//     conversation). Items of unknown origin (a restart, another instance)
//     are sent; when a member rejects encrypted content, the call is sent
//     to it once more without every item it did not produce.
//
// Ownership is remembered by balance.State (response ids and SHA-256 of
// encrypted contents, never the contents), at most 200,000 keys, oldest
// dropped.

// stateFor returns the body for member m with the reasoning items it cannot
// read removed (POOL-18): those another member produced, and, after m
// rejected encrypted content once in this call (all), every item m did not
// produce. The items' owners are looked up once per call, all at once (a
// shared state: one round trip, not one per item and attempt).
func (c *call) stateFor(m string, body []byte) []byte {
	body = c.signedFor(m, body) // signatures.go
	if !c.ci.Encrypted {
		return body
	}
	if c.owners == nil {
		var keys []string
		responses.StripReasoning(body, func(key string) bool { keys = append(keys, key); return true })
		c.owners = c.p.state.OwnersOf(c.sctx(), keys)
	}
	all := c.stripAll[m]
	return responses.StripReasoning(body, func(key string) bool {
		owner := c.owners[key]
		if all {
			return owner == m
		}
		return owner == "" || owner == m
	})
}

// stateOwnerKey is the state key whose owner the call starts on:
// previous_response_id, else its conversation, else its first
// item_reference; "" for none.
func (c *call) stateOwnerKey() string {
	if c.ci.Previous != "" {
		return responses.RespKey(c.ci.Previous)
	}
	if len(c.ci.StateRefs) > 0 {
		return c.ci.StateRefs[0]
	}
	return ""
}

// owned are the state keys the attempt o leaves on its member: what its
// answer carried, and after a success the conversation and items the
// request named, which that member evidently holds.
func (c *call) owned(o outcome) []string {
	if o.fail != nil || len(c.ci.StateRefs) == 0 {
		return o.state
	}
	return slices.Concat(o.state, c.ci.StateRefs)
}
