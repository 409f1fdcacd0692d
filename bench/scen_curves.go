package main

import (
	"fmt"
	"net"
	"time"
)

// curveConcs are the client counts of the plain-HTTP curves.
var curveConcs = []int{1, 4, 16, 64, 256, 512}

// curves is scenario 6: how plain-HTTP cost grows with concurrency —
// req/s, p99 and proxy CPU per request at 1 … 512 clients, direct,
// dual-proxy and squid on the same axes. Each point is 2 interleaved
// rounds of half the normal length, so the scenario stays under a minute.
func (w *world) curves() error {
	const sec = "6 plain HTTP curve"
	fmt.Println("scenario 6: plain HTTP against concurrency")
	org := w.origin.plainAddr()
	dp, err := w.startDualProxy("dp-curve", "--upstream-host", "")
	if err != nil {
		return err
	}
	defer dp.stop()
	paths := []named{{"dual-proxy", path{proxy: dp.addr, origin: org}, []*proc{dp}}}
	if sq := w.gw["squid"]; sq != nil {
		paths = append(paths, named{"squid", path{proxy: sq.addr, origin: org}, []*proc{sq}})
	}
	paths = append(paths, named{"direct", path{origin: org}, nil})
	saved := w.ph
	w.ph = phases{warm: saved.warm / 2, round: max(saved.round/2, 200*time.Millisecond), rounds: min(saved.rounds, 2)}
	defer func() { w.ph = saved }()
	for _, c := range curveConcs {
		for i, r := range w.group(sec, paths, c, false) {
			name, x := paths[i].name, float64(c)
			w.point("plain-rps.svg", "Plain HTTP keep-alive: throughput", "concurrent clients", "req/s (median round)", true, name, x, r.rps)
			w.point("plain-p99.svg", "Plain HTTP keep-alive: p99 latency", "concurrent clients", "p99 (ms)", true, name, x, float64(r.p99.Microseconds())/1000)
			if r.cpuPerOp > 0 {
				w.point("plain-cpu.svg", "Plain HTTP: proxy CPU per request", "concurrent clients", "user+system CPU (µs/request)", true, name, x, float64(r.cpuPerOp.Nanoseconds())/1000)
			}
		}
	}
	w.note("Scenario 6 (curves, docs/benchmarks/plain-*.svg): plain HTTP at %v clients, each point %d interleaved rounds of %v after %v warm-up; direct has no proxy CPU.", curveConcs, w.ph.rounds, w.ph.round, w.ph.warm)
	return nil
}

// idlePeer measures RSS and fds of a peer proxy (squid, the minimal Go
// relay) holding idle CONNECT tunnels, for the idle-tunnel curves next to
// dual-proxy. It stops at the peer's own fd budget: fdsPer fds per tunnel
// under limit.
func (w *world) idlePeer(name string, p *proc, target string, steps []int, fdsPer int, limit uint64) {
	rss0, _, err := p.status()
	if err != nil {
		w.note("%s idle tunnels: %v", name, err)
		return
	}
	fd0 := countFDs(p)
	w.point("idle-rss.svg", "Idle CONNECT tunnels: memory", "idle tunnels", "RSS (MiB)", false, name, 0, float64(rss0)/1024)
	w.point("idle-fds.svg", "Idle CONNECT tunnels: file descriptors", "idle tunnels", "open fds", false, name, 0, float64(fd0))
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for _, n := range steps {
		if uint64(n*fdsPer+fd0+200) > limit {
			w.note("%s idle tunnels: stopped at %d, %d more would pass its %d-fd limit at %d fds per tunnel.", name, len(conns), n-len(conns), limit, fdsPer)
			return
		}
		more, err := openIdle(p.addr, target, n-len(conns), 64)
		conns = append(conns, more...)
		if err != nil {
			w.note("%s idle tunnels: opened %d of %d: %v", name, len(conns), n, err)
			return
		}
		time.Sleep(time.Second) // let the tunnels settle before reading RSS, as for dual-proxy
		rss, _, err := p.status()
		if err != nil {
			return
		}
		fds := countFDs(p)
		w.point("idle-rss.svg", "", "", "", false, name, float64(n), float64(rss)/1024)
		w.point("idle-fds.svg", "", "", "", false, name, float64(n), float64(fds))
		fmt.Printf("  %s %d tunnels: RSS %d KiB (%.1f KiB/tunnel), fds %.1f/tunnel\n", name, n, rss, float64(rss-rss0)/float64(n), float64(fds-fd0)/float64(n))
		w.add(row{sec: "3 memory", path: fmt.Sprintf("%s with %s idle tunnels", name, commas(int64(n))), conc: commas(int64(n)),
			result: fmt.Sprintf("%.1f MiB RSS (%.1f KiB/tunnel), %.1f fds/tunnel", float64(rss)/1024, float64(rss-rss0)/float64(n), float64(fds-fd0)/float64(n))})
	}
}
