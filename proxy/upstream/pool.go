package upstream

import (
	"sync"
	"time"
)

// connPool holds idle upstream connections, newest last per key. Every
// idle connection is closed at most ttl after it became idle: a timer is
// armed for the oldest one whenever the pool is not empty, so a connection
// to an origin never asked again does not outlive ttl (the
// README documents 90 s).
type connPool struct {
	ttl time.Duration // idle lifetime; set before first use

	mu sync.Mutex
	// idle holds each key's connections, newest last, behind a pointer:
	// get and put look the key up once (two lookups each, with
	// both strings of the key hashed every time, per plain request).
	idle  map[poolKey]*idleConns
	n     int
	timer *time.Timer // fires at the oldest connection's expiry; nil when empty
}

// monoEpoch is the origin of monoNow.
var monoEpoch = time.Now()

// monoNow is the monotonic time since monoEpoch: one clock read where
// time.Now makes two (wall and monotonic; the pool read the
// clock twice per plain request, ≈ 95 ns each on the benchmark machine).
func monoNow() time.Duration { return time.Since(monoEpoch) }

// poolKey names the path end of a pooled connection: the candidate
// (candidate.Candidate.Key) and the gateway's or origin's address. A struct, so
// that a lookup builds no string.
type poolKey struct{ cand, end string }

// idleConns is one key's idle connections, newest last.
type idleConns struct{ conns []*upConn }

// get returns an idle connection for key that is not too old, or nil.
func (p *connPool) get(key poolKey) *upConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	ic := p.idle[key]
	if ic == nil {
		return nil
	}
	for {
		l := ic.conns
		if len(l) == 0 {
			return nil
		}
		c := l[len(l)-1]
		l[len(l)-1] = nil
		ic.conns = l[:len(l)-1]
		p.n--
		now := monoNow()
		if !c.headDeadline.IsZero() && !monoEpoch.Add(now).Before(c.headDeadline) {
			// A past deadline would fail the next request's first read
			// (send arms its own; this keeps sendPlain's quiet working).
			c.conn.SetReadDeadline(time.Time{})
			c.headDeadline = time.Time{}
		}
		// The check that nothing arrived while idle is send's:
		// outside this lock, and on Unix in the same read(2) as the wait
		// for the answer.
		if now-c.since < p.ttl && c.br.Buffered() == 0 {
			return c
		}
		c.conn.Close()
	}
}

// sweep closes idle connections older than ttl (all keys); when the pool
// is still full it drops the oldest one. It re-arms the timer for the
// oldest connection left. Called with mu held.
func (p *connPool) sweep() {
	now := monoNow()
	var oldestKey poolKey
	var oldest time.Duration
	found := false
	for k, ic := range p.idle {
		l := ic.conns
		kept := l[:0]
		for _, c := range l {
			if now-c.since >= p.ttl {
				c.conn.Close()
				p.n--
				continue
			}
			kept = append(kept, c)
		}
		clear(l[len(kept):])
		if len(kept) == 0 {
			delete(p.idle, k)
			continue
		}
		ic.conns = kept
		if !found || kept[0].since < oldest {
			oldestKey, oldest, found = k, kept[0].since, true
		}
	}
	if p.n >= maxIdle && found {
		ic := p.idle[oldestKey]
		ic.conns[0].conn.Close()
		ic.conns[0] = nil
		ic.conns = ic.conns[1:]
		p.n--
	}
	p.arm(found, oldest+p.ttl-now)
}

// arm schedules the next sweep after d when any is true, else stops the
// timer. Called with mu held.
func (p *connPool) arm(any bool, d time.Duration) {
	if !any {
		if p.timer != nil {
			p.timer.Stop()
			p.timer = nil
		}
		return
	}
	d = max(d, time.Millisecond)
	if p.timer == nil {
		p.timer = time.AfterFunc(d, p.expire)
		return
	}
	p.timer.Reset(d)
}

// expire is the timer's sweep.
func (p *connPool) expire() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.timer != nil {
		p.sweep()
	}
}

// put returns c to the pool, or closes it when the pool is full.
func (p *connPool) put(c *upConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.idle == nil {
		p.idle = map[poolKey]*idleConns{}
	}
	if p.n >= maxIdle {
		p.sweep()
	}
	ic := p.idle[c.key]
	if p.n >= maxIdle || ic != nil && len(ic.conns) >= maxIdlePerKey {
		c.conn.Close()
		return
	}
	if ic == nil {
		ic = &idleConns{}
		p.idle[c.key] = ic
	}
	c.since = monoNow()
	ic.conns = append(ic.conns, c)
	p.n++
	if p.timer == nil {
		p.arm(true, p.ttl) // c is the only, hence oldest, idle connection
	}
}

// closeAll closes every idle connection and stops the timer.
func (p *connPool) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, ic := range p.idle {
		for _, c := range ic.conns {
			c.conn.Close()
		}
		delete(p.idle, k)
	}
	p.n = 0
	p.arm(false, 0)
}
