package balance

import (
	"sort"
	"sync"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
)

// recentCalls is how many calls the status keeps.
const recentCalls = 200

// CallRecord is one finished call in the status document (SPEC POOL-13):
// no prompt, no key, no raw session id.
type CallRecord struct {
	Time    time.Time `json:"time"`
	Pool    string    `json:"pool"`
	Session string    `json:"session,omitempty"` // short hash
	Model   string    `json:"model"`             // unified model id
	Member  string    `json:"member,omitempty"`  // member that answered, "" if none
	// MemberModel is the member's own id of the model (its target), when
	// it is not Model; the answer named Model.
	MemberModel string `json:"member_model,omitempty"`
	// Failovers counts members that failed before the one that answered.
	Failovers int `json:"failovers"`
	// TTFBMs is the time from request to the first byte sent to the client (ms).
	TTFBMs int64 `json:"ttfb_ms"`
	// Class is "" on success, else the failure class (or "canceled").
	Class  string `json:"class,omitempty"`
	Status int    `json:"status,omitempty"`
	// Instance names the process that served the call when the state is
	// shared; "" in memory.
	Instance string `json:"instance,omitempty"`
	// API is the client's API ("anthropic", "openai-chat", "responses",
	// "gemini"); Translated tells that the answering member speaks another
	// API and the call was translated.
	API        string `json:"api,omitempty"`
	Translated bool   `json:"translated,omitempty"`
}

// CacheStats are prompt-cache token totals from the answers' usage fields
// (Anthropic cache_read_input_tokens and cache_creation_input_tokens, Chat
// and Responses cached_tokens):
// HitRatio = cache_read / (input + cache_read + cache_creation).
type CacheStats struct {
	InputTokens         int64   `json:"input_tokens"`
	CacheReadTokens     int64   `json:"cache_read_tokens"`
	CacheCreationTokens int64   `json:"cache_creation_tokens"`
	HitRatio            float64 `json:"hit_ratio"`

	seen time.Time // last update, for pruning
}

func (s *CacheStats) add(u neutral.Accounting) {
	s.InputTokens += u.Input
	s.CacheReadTokens += u.CacheRead
	s.CacheCreationTokens += u.CacheCreation
	if total := s.InputTokens + s.CacheReadTokens + s.CacheCreationTokens; total > 0 {
		s.HitRatio = float64(s.CacheReadTokens) / float64(total)
	}
}

// stats holds recent calls and cache totals.
type stats struct {
	mu       sync.Mutex
	recent   []CallRecord // ring, next write at head
	head     int
	full     bool
	sessions map[[2]string]*CacheStats // (pool, session hash)
	members  map[[2]string]*CacheStats // (pool, member)
	// outcomes counts successes [0] and failures [1] per (pool, member):
	// the status shows them per pool, while cooldowns stay per channel.
	outcomes map[[2]string]*[2]int64
}

func newStats() *stats {
	return &stats{recent: make([]CallRecord, recentCalls), sessions: map[[2]string]*CacheStats{}, members: map[[2]string]*CacheStats{},
		outcomes: map[[2]string]*[2]int64{}}
}

// outcome counts one success or failure of member in pool.
func (s *stats) outcome(pool, member string, success bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := [2]string{pool, member}
	c := s.outcomes[k]
	if c == nil {
		c = &[2]int64{}
		s.outcomes[k] = c
	}
	if success {
		c[0]++
	} else {
		c[1]++
	}
}

func (s *stats) add(r CallRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recent[s.head] = r
	s.head = (s.head + 1) % len(s.recent)
	if s.head == 0 {
		s.full = true
	}
}

// maxSessionStats bounds the per-session cache totals kept in memory.
const maxSessionStats = 10000

func (s *stats) usage(pool, session, member string, u neutral.Accounting, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if session != "" && len(s.sessions) >= maxSessionStats && s.sessions[[2]string{pool, session}] == nil {
		// Drop sessions idle for a day, else the idlest half.
		var seen []time.Time
		for k, cs := range s.sessions {
			if now.Sub(cs.seen) > 24*time.Hour {
				delete(s.sessions, k)
			} else {
				seen = append(seen, cs.seen)
			}
		}
		if len(s.sessions) >= maxSessionStats {
			sort.Slice(seen, func(i, j int) bool { return seen[i].Before(seen[j]) })
			cut := seen[len(seen)/2]
			for k, cs := range s.sessions {
				if !cs.seen.After(cut) {
					delete(s.sessions, k)
				}
			}
		}
	}
	get := func(m map[[2]string]*CacheStats, k [2]string) *CacheStats {
		if m[k] == nil {
			m[k] = &CacheStats{}
		}
		return m[k]
	}
	if session != "" {
		cs := get(s.sessions, [2]string{pool, session})
		cs.add(u)
		cs.seen = now
	}
	get(s.members, [2]string{pool, member}).add(u)
}

func (s *stats) list() []CallRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.full {
		return append([]CallRecord{}, s.recent[:s.head]...)
	}
	return append(append([]CallRecord{}, s.recent[s.head:]...), s.recent[:s.head]...)
}

// counts returns member's successes, failures and cache totals in pool.
func (s *stats) counts(pool, member string) (successes, failures int64, cache CacheStats) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := [2]string{pool, member}
	if c := s.outcomes[k]; c != nil {
		successes, failures = c[0], c[1]
	}
	if cs := s.members[k]; cs != nil {
		cache = *cs
	}
	return successes, failures, cache
}

// sessionCache returns the cache totals of (pool, session hash).
func (s *stats) sessionCache(pool, session string) (CacheStats, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cs := s.sessions[[2]string{pool, session}]; cs != nil {
		return *cs, true
	}
	return CacheStats{}, false
}
