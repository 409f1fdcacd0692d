package pool

import (
	"sync"

	"github.com/dual-proxy/dual-proxy/pool/wire"
)

// Stateful APIs across members (SPEC POOL-18). The Responses API carries
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
//   - encrypted reasoning items (Codex: store false, include
//     reasoning.encrypted_content, the whole history resent each turn):
//     each member receives the request without the reasoning items another
//     member produced (the model loses that earlier reasoning, never the
//     conversation). Items of unknown origin (a restart, another instance)
//     are sent; when a member rejects encrypted content, the call is sent
//     to it once more without every item it did not produce.
//
// Ownership is remembered in memory (response ids and SHA-256 of encrypted
// contents, never the contents), at most maxStateEntries, oldest dropped.

// maxStateEntries bounds the ownership memory (entries of ~100 bytes).
const maxStateEntries = 200_000

// stateOwners maps state keys ("r:" response id, "e:" content hash) to the
// member that produced them. Safe for concurrent use.
type stateOwners struct {
	mu    sync.Mutex
	owner map[string]string
	ring  []string // insertion order, for eviction
	next  int
}

func newStateOwners() *stateOwners { return &stateOwners{owner: map[string]string{}} }

// record notes that member produced the state keys.
func (s *stateOwners) record(member string, keys []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		if _, seen := s.owner[k]; !seen {
			if len(s.ring) < maxStateEntries {
				s.ring = append(s.ring, k)
			} else {
				delete(s.owner, s.ring[s.next])
				s.ring[s.next] = k
				s.next = (s.next + 1) % maxStateEntries
			}
		}
		s.owner[k] = member
	}
}

// of returns the member that produced key, or "".
func (s *stateOwners) of(key string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.owner[key]
}

// stateFor returns the body for member m with the reasoning items it cannot
// read removed (POOL-18): those another member produced, and, after m
// rejected encrypted content once in this call (all), every item m did not
// produce.
func (c *call) stateFor(m string, body []byte) []byte {
	if !c.ci.Encrypted {
		return body
	}
	all := c.stripAll[m]
	return wire.StripReasoning(body, func(key string) bool {
		owner := c.p.state.of(key)
		if all {
			return owner == m
		}
		return owner == "" || owner == m
	})
}

// stateOwner is the member holding the response this call continues
// (previous_response_id), or "".
func (c *call) stateOwner() string {
	if c.ci.Previous == "" {
		return ""
	}
	return c.p.state.of(wire.RespKey(c.ci.Previous))
}
