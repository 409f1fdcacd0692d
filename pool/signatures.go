package pool

import (
	"strings"
)

// Reasoning signatures across members. Anthropic thinking
// and redacted_thinking blocks and Gemini thoughtSignatures verify only at
// the provider account that minted them; any other member answers 400
// ("Invalid `signature` in `thinking` block", "Corrupted thought
// signature."), on that turn and every later one, since the client resends
// its whole history. The pool's rule, for a call passed through to a member
// of the client's API (translation carries no signature to another API:
// other APIs have no slot for them, and Gemini requests the pool writes
// carry the placeholder):
//
//   - the pool remembers who minted each signature it relayed (SigKey
//     hashes, in balance.State with the Responses state: shared by a team
//     on Redis, at most 200,000 keys);
//   - before a call goes to member m, Anthropic reasoning blocks another
//     member minted, and thinking blocks with an empty signature (reasoning
//     the pool translated from another API), are removed; Anthropic
//     documents that thinking blocks of earlier turns may be left out.
//     When the removed block opened the assistant message of a tool loop in
//     progress, the call is sent with thinking disabled instead of failing
//     (the Anthropic Flavour's StripSignatures). Gemini thoughtSignatures another member minted
//     become Gemini's placeholder skip_thought_signature_validator;
//   - signatures of unknown origin (minted before a restart, or through
//     another instance without a shared state) are sent; a member that
//     answers that a signature is invalid (class state: no cooldown) gets
//     the call once more without every signature it did not mint, and
//     those of unknown origin are remembered as unverified (owner "?", no
//     member's id), so later turns leave them out for every member instead
//     of paying a refused call each time. The session keeps its binding:
//     no cache is lost to a needless move.

// signedFor returns the passthrough body for member m with the reasoning
// m cannot verify removed or neutralised. The owners of the body's
// signatures are looked up once per call, all at once.
func (c *call) signedFor(m string, body []byte) []byte {
	if !c.ci.Signed {
		return body
	}
	if c.sigOwners == nil {
		var keys []string
		keys, c.sigUnsigned = c.fl.SignatureKeys(body)
		c.sigOwners = c.p.state.OwnersOf(c.sctx(), keys)
		if c.sigOwners == nil {
			c.sigOwners = map[string]string{}
		}
		for _, k := range keys {
			if _, known := c.sigOwners[k]; !known {
				c.sigOwners[k] = "" // unknown origin, listed for unverified
			}
		}
	}
	all := c.stripAll[m]
	keep := func(key string) bool {
		owner := c.sigOwners[key]
		if all {
			return owner == m
		}
		return owner == "" || owner == m
	}
	strip := c.sigUnsigned
	for k := range c.sigOwners {
		if !strip && !keep(k) {
			strip = true
		}
	}
	if !strip {
		return body // nothing m cannot verify: the usual turn of a session on its member
	}
	return c.fl.StripSignatures(body, keep)
}

// unverifiedOwner is the owner recorded for signatures of unknown origin
// a member refused: not a member id (config.ValidID refuses "?").
const unverifiedOwner = "?"

// unverified records the request's signatures of unknown origin as
// unverified after member m refused a signature (one State write, only on
// such a refusal).
func (c *call) unverified(m string) {
	var keys []string
	for k, owner := range c.sigOwners {
		if owner == "" {
			keys = append(keys, k)
			c.sigOwners[k] = unverifiedOwner
		}
	}
	if len(keys) > 0 {
		c.p.state.RecordOwner(c.sctx(), unverifiedOwner, keys)
		c.p.log.Info("pool member refused reasoning signatures of unknown origin", "pool", c.pc.ID, "member", m,
			"signatures", len(keys), "session", c.session)
	}
}

// signatureRefused reports whether a member's state-class error says a
// reasoning signature (or data) in the request is invalid.
func signatureRefused(typ, msg string) bool {
	s := strings.ToLower(typ + " " + msg)
	return strings.Contains(s, "signature") || strings.Contains(s, "redacted_thinking")
}
