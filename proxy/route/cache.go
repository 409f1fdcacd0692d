package route

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// Cache is the per-host preference cache (SPEC ORD-4): after a success
// through candidate C for host H, H → C.Key() is kept for a TTL in an LRU
// of bounded size. Safe for concurrent use.
//
// It is built on golang-lru's simplelru with the expiry checked here, not
// on golang-lru/v2/expirable: expirable (v2.0.7) starts a janitor goroutine
// that can never be stopped, which would outlive proxy shutdown and trip
// goleak, and it reads the wall clock, which tests cannot
// drive. Expired entries are dropped when met (Get, Snapshot) or pushed out
// by LRU order; memory is bounded by size either way.
type Cache struct {
	ttl atomic.Int64 // entry lifetime (ns); <= 0: disabled (SetTTL)
	now func() time.Time

	mu  sync.Mutex
	lru *simplelru.LRU[string, cacheValue] // nil when disabled
	// gen changes (under mu) whenever an entry goes (removed, expired,
	// evicted) or a host is put with another key: a caller holding the
	// generation of its own Put knows its entry is unchanged while gen is
	// (Fresh).
	gen atomic.Uint64
}

type cacheValue struct {
	key     string
	expires time.Time
}

// CacheEntry is one cache entry for the status page.
type CacheEntry struct {
	Host    string    `json:"host"`
	Key     string    `json:"candidate"`
	Expires time.Time `json:"expires"`
}

// NewCache returns a cache of at most size hosts (the caller passes 1000) whose
// entries live ttl (--pref-ttl-ms). size <= 0 or ttl <= 0 disables the cache:
// Put does nothing and Get always misses.
func NewCache(size int, ttl time.Duration) *Cache {
	return NewCacheClock(size, ttl, time.Now)
}

// NewCacheClock is NewCache with an injected clock (time.Now when nil).
func NewCacheClock(size int, ttl time.Duration, now func() time.Time) *Cache {
	if now == nil {
		now = time.Now
	}
	c := &Cache{now: now}
	c.ttl.Store(int64(ttl))
	if size > 0 {
		c.lru, _ = simplelru.NewLRU[string, cacheValue](size, func(string, cacheValue) { c.gen.Add(1) }) // size > 0: no error
	}
	return c
}

// Get returns the candidate key cached for host and marks the entry most
// recently used. An expired entry is removed and reported as a miss.
func (c *Cache) Get(host string) (key string, ok bool) {
	if c.lru == nil || c.ttl.Load() <= 0 {
		return "", false
	}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.lru.Get(host)
	if !ok {
		return "", false
	}
	if !now.Before(v.expires) {
		c.lru.Remove(host) // the eviction callback changes gen
		return "", false
	}
	return v.key, true
}

// Put caches host → key for the TTL, replacing any entry for host and
// evicting the least recently used host when the cache is full.
func (c *Cache) Put(host, key string) {
	c.PutAt(host, key, c.now())
}

// PutAt is Put at time now (the cache's clock, read by the caller) and
// returns the generation after it, for Fresh.
func (c *Cache) PutAt(host, key string, now time.Time) uint64 {
	ttl := time.Duration(c.ttl.Load())
	if c.lru == nil || ttl <= 0 {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.lru.Peek(host); ok && old.key != key {
		c.gen.Add(1)
	}
	c.lru.Add(host, cacheValue{key: key, expires: now.Add(ttl)})
	return c.gen.Load()
}

// Fresh reports, without a lock, whether the entry a PutAt that returned
// gen made is still there with its key: nothing was removed, expired,
// evicted or put with another key since (an entry made at t expires at
// t+TTL, so the caller bounds how long ago that PutAt was).
func (c *Cache) Fresh(gen uint64) bool { return c.lru != nil && c.gen.Load() == gen }

// TTL is the entries' lifetime.
func (c *Cache) TTL() time.Duration { return time.Duration(c.ttl.Load()) }

// Remove drops the entry for host, if any.
func (c *Cache) Remove(host string) {
	if c.lru == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Remove(host)
}

// RemoveIf drops the entry for host only if it still maps to key, so a
// failure of the old cached candidate does not erase a newer success
// through another one. It reports whether it removed one.
func (c *Cache) RemoveIf(host, key string) bool {
	if c.lru == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.lru.Peek(host); ok && v.key == key {
		return c.lru.Remove(host)
	}
	return false
}

// Snapshot returns the live entries, most recently used first, and drops
// the expired ones. The result is a copy.
func (c *Cache) Snapshot() []CacheEntry {
	if c.lru == nil || c.ttl.Load() <= 0 {
		return nil
	}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	hosts := c.lru.Keys() // oldest first
	out := make([]CacheEntry, 0, len(hosts))
	for i := len(hosts) - 1; i >= 0; i-- {
		v, _ := c.lru.Peek(hosts[i])
		if !now.Before(v.expires) {
			c.lru.Remove(hosts[i])
			continue
		}
		out = append(out, CacheEntry{Host: hosts[i], Key: v.key, Expires: v.expires})
	}
	return out
}
