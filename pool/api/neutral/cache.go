package neutral

// CacheOf is the neutral breakpoint of a cache_control object (nil: none).
func CacheOf(c *AnCache) *Cache {
	if c == nil {
		return nil
	}
	return &Cache{TTL: c.TTL}
}

// AnCacheOf is the cache_control object of a neutral breakpoint.
func AnCacheOf(c *Cache) *AnCache {
	if c == nil {
		return nil
	}
	return &AnCache{Type: "ephemeral", TTL: c.TTL}
}

// AnCache is a cache_control object (Anthropic "Prompt caching"): type
// "ephemeral", ttl "5m" or "1h" (absent: 5 minutes).
type AnCache struct {
	Type string `json:"type"`
	TTL  string `json:"ttl,omitempty"`
}
