package balance

import "sync"

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
