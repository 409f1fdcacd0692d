package route

import "time"

// A running instance's settings change: the state types take
// their new parameter and forget the candidates that left the list, so a
// removed gateway's cooldowns, cache entries and health marks go with it
// and an added one starts clean.

// Reconfigure sets the cooldown length (d <= 0: no more cooling; running
// cooldowns keep their end) and drops the records of every candidate key
// keep refuses, host-scoped ones included.
func (c *Cooldowns) Reconfigure(d time.Duration, keep func(key string) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.d = d
	for k := range c.cands {
		if !keep(k) {
			delete(c.cands, k)
		}
	}
	for hk := range c.hosts {
		if !keep(hk.key) {
			delete(c.hosts, hk)
		}
	}
}

// Reconfigure sets the passing checks a failed candidate needs (values
// below 1 mean 1) and drops the marks and last results of every candidate
// key keep refuses; a refused preference is cleared (the next check picks
// one).
func (h *Health) Reconfigure(recoverCount int, keep func(key string) bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recover = max(recoverCount, 1)
	for k := range h.marks {
		if !keep(k) {
			delete(h.marks, k)
		}
	}
	kept := h.results[:0:0]
	for _, r := range h.results {
		if keep(r.Key) {
			kept = append(kept, r)
		}
	}
	h.results = kept
	if h.preferred != "" && !keep(h.preferred) {
		h.preferred = ""
	}
}

// Keep drops every entry whose candidate key keep refuses (the per-host
// cache re-checked against a new candidate list).
func (c *Cache) Keep(keep func(key string) bool) {
	if c.lru == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, host := range c.lru.Keys() {
		if v, ok := c.lru.Peek(host); ok && !keep(v.key) {
			c.lru.Remove(host) // the eviction callback moves gen
		}
	}
}

// SetTTL sets the lifetime of entries put from now on (--pref-ttl-ms); ttl <= 0
// disables the cache and drops its entries. Entries already there keep their
// expiry. A cache made with size <= 0 stays disabled.
func (c *Cache) SetTTL(ttl time.Duration) {
	c.ttl.Store(int64(ttl))
	if ttl > 0 || c.lru == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Purge() // the eviction callback moves gen
}
