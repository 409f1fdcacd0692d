package upstream

import (
	"sync"
	"time"
)

// connPool holds idle upstream connections, newest last per key.
type connPool struct {
	mu    sync.Mutex
	idle  map[string][]*upConn
	n     int
	swept time.Time // last sweep (at most every sweepEvery, and when full)
}

// sweepEvery is how often put drops expired idle connections of all keys,
// so connections to origins never asked again do not hold descriptors.
const sweepEvery = 30 * time.Second

// get returns an idle connection for key that is not too old, or nil.
func (p *connPool) get(key string) *upConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		l := p.idle[key]
		if len(l) == 0 {
			return nil
		}
		c := l[len(l)-1]
		p.idle[key] = l[:len(l)-1]
		p.n--
		if time.Since(c.since) < idleConnTimeout && c.quiet() {
			return c
		}
		c.conn.Close()
	}
}

// sweep closes idle connections older than idleConnTimeout (all keys);
// when the pool is still full it drops the oldest one. Called with mu held.
func (p *connPool) sweep() {
	now := time.Now()
	var oldestKey string
	var oldest time.Time
	for k, l := range p.idle {
		kept := l[:0]
		for _, c := range l {
			if now.Sub(c.since) >= idleConnTimeout {
				c.conn.Close()
				p.n--
				continue
			}
			kept = append(kept, c)
		}
		if len(kept) == 0 {
			delete(p.idle, k)
			continue
		}
		p.idle[k] = kept
		if oldestKey == "" || kept[0].since.Before(oldest) {
			oldestKey, oldest = k, kept[0].since
		}
	}
	if p.n >= maxIdle && oldestKey != "" {
		l := p.idle[oldestKey]
		l[0].conn.Close()
		p.idle[oldestKey] = l[1:]
		p.n--
	}
	p.swept = now
}

// put returns c to the pool, or closes it when the pool is full.
func (p *connPool) put(c *upConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.idle == nil {
		p.idle = map[string][]*upConn{}
	}
	if p.n >= maxIdle || time.Since(p.swept) > sweepEvery {
		p.sweep()
	}
	if p.n >= maxIdle || len(p.idle[c.key]) >= maxIdlePerKey {
		c.conn.Close()
		return
	}
	c.since = time.Now()
	p.idle[c.key] = append(p.idle[c.key], c)
	p.n++
}

// closeAll closes every idle connection.
func (p *connPool) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, l := range p.idle {
		for _, c := range l {
			c.conn.Close()
		}
		delete(p.idle, k)
	}
	p.n = 0
}
