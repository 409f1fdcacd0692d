package balance

import (
	"sync"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/config"
)

// maxGrowth caps cooldown growth at 10× the class base (Envoy outlier detection
// style).
const maxGrowth = 10

// ModelKey is the cooldown key of one (member, target model): a
// model_not_found failure cools only that pair.
func ModelKey(member, target string) string { return member + "\x00" + target }

// cooldownState is one member's passive health.
type cooldownState struct {
	until time.Time
	since time.Time // when the running cooldown began (extensions keep it)
	class string
	last  time.Duration // length of the most recent cooldown
}

// cooldowns tracks cooldowns per key (a channel id, or channel id + "\x00" +
// target model for model_not_found). A channel shared by two pools shares
// its cooldown: auth, quota and rate limits belong to the channel's key.
type cooldowns struct {
	mu sync.Mutex
	m  map[string]*cooldownState
}

func newCooldowns() *cooldowns { return &cooldowns{m: map[string]*cooldownState{}} }

func (c *cooldowns) state(key string) *cooldownState {
	st := c.m[key]
	if st == nil {
		st = &cooldownState{}
		c.m[key] = st
	}
	return st
}

// fail records a failure of class at now and returns the cooldown deadline
// (zero when the class has no cooldown). base is the class's configured
// length; explicit is a server-given wait (Retry-After and friends), used as
// is. Rules: a failure within a running cooldown extends it
// when its deadline is later (the longest deadline wins); a failure soon
// after a cooldown ended (within that cooldown's length) doubles the previous
// length, capped at 10× base; otherwise the cooldown is base.
func (c *cooldowns) fail(key, class string, base, explicit time.Duration, now time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.state(key)
	wasCooling := now.Before(st.until)
	var d time.Duration
	switch {
	case explicit > 0:
		d = explicit
	case base <= 0:
		return time.Time{}
	case st.last > 0 && !wasCooling && now.Sub(st.until) <= max(st.last, base):
		d = min(max(st.last*2, base), base*maxGrowth)
	default:
		d = base
	}
	if deadline := now.Add(d); deadline.After(st.until) {
		st.until, st.class = deadline, class
	}
	if !wasCooling {
		st.since = now
	}
	if wasCooling {
		st.last = max(st.last, d)
	} else {
		st.last = d
	}
	return st.until
}

// succeed records a success: the cooldown and its growth reset.
func (c *cooldowns) succeed(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.state(key)
	st.until, st.since, st.class, st.last = time.Time{}, time.Time{}, "", 0
}

// until reports the cooldown deadline of key and whether it is cooling at now.
func (c *cooldowns) until(key string, now time.Time) (time.Time, string, bool) {
	cd, ok := c.get(key, now)
	return cd.Until, cd.Class, ok
}

// get reports the running cooldown of key at now, if any.
func (c *cooldowns) get(key string, now time.Time) (Cooldown, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.m[key]
	if st == nil || !now.Before(st.until) {
		return Cooldown{}, false
	}
	return Cooldown{Until: st.until, Class: st.class, Since: st.since}, true
}

// retain drops state of channels that no longer exist.
func (c *cooldowns) retain(cfg *config.Config) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.m {
		id := k
		for i := 0; i < len(k); i++ {
			if k[i] == 0 {
				id = k[:i]
				break
			}
		}
		if cfg.Channel(id) == nil {
			delete(c.m, k)
		}
	}
}

// live lists the running cooldowns at now.
func (c *cooldowns) live(now time.Time) []CooldownEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []CooldownEntry
	for k, st := range c.m {
		if now.Before(st.until) {
			out = append(out, CooldownEntry{k, st.until, st.class, st.last})
		}
	}
	return out
}
