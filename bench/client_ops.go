package main

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// bulk reads GET /bulk over one connection of p for the warm-up and every
// round; it returns the bytes per second of each round.
func bulk(p path, ph phases) ([]float64, error) {
	c, br, err := p.dial(time.Now().Add(opTimeout))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	total := ph.warm + time.Duration(ph.rounds)*ph.round
	c.SetDeadline(time.Now().Add(total + opTimeout))
	if _, err := c.Write(p.reqLine("/bulk", false)); err != nil {
		return nil, err
	}
	if status, _, err := readHead(br); err != nil || status != 200 {
		return nil, fmt.Errorf("bulk answer %d: %v", status, err)
	}
	buf := make([]byte, 256<<10)
	var rates []float64
	end := time.Now().Add(ph.warm)
	var n int64
	start := time.Now()
	for round := 0; round <= ph.rounds; {
		k, err := br.Read(buf)
		n += int64(k)
		if err != nil {
			return nil, err
		}
		if now := time.Now(); now.After(end) {
			if round > 0 {
				rates = append(rates, float64(n)/now.Sub(start).Seconds())
			}
			round++
			n, start, end = 0, now, now.Add(ph.round)
		}
	}
	return rates, nil
}

// openIdle opens n CONNECT tunnels to target through proxy with conc
// parallel openers and returns them open and idle. It stops at the first
// error and returns what it has opened so far with the error.
func openIdle(proxy, target string, n, conc int) ([]net.Conn, error) {
	var (
		mu    sync.Mutex
		conns = make([]net.Conn, 0, n)
		first error
		next  atomic.Int64
		wg    sync.WaitGroup
	)
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				p := path{proxy: proxy, origin: target, tunnel: true}
				c, _, err := p.dial(time.Now().Add(opTimeout))
				mu.Lock()
				if err != nil {
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
				c.SetDeadline(time.Time{})
				conns = append(conns, c)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return conns, first
}

// once times one request over a new connection of p (dial, CONNECT, TLS,
// request, answer): the "time to a successful response" of the failover
// scenario.
func once(p path) (time.Duration, error) {
	t0 := time.Now()
	c, br, err := p.dial(t0.Add(opTimeout))
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if _, err := c.Write(p.reqLine("/", true)); err != nil {
		return 0, err
	}
	status, _, err := readResponse(br)
	if err != nil {
		return 0, err
	}
	if status != 200 {
		return 0, fmt.Errorf("status %d", status)
	}
	return time.Since(t0), nil
}
