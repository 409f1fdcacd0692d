package main

import (
	"fmt"
	"net"
	"time"
)

// memory is scenario 3: RSS, threads, goroutines and file descriptors of
// one dual-proxy process idle, with 1,000 and with w.tunnels idle tunnels,
// then the same for the peers (the minimal Go relay and squid).
func (w *world) memory() error {
	fmt.Println("scenario 3: memory of idle tunnels")
	dp, base, err := w.memoryIdle()
	if dp != nil {
		defer dp.stop()
	}
	if err != nil {
		return err
	}
	target := w.origin.plainAddr() // not 443: no TLS probe per tunnel
	steps := tunnelSteps(w.tunnels)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	last, err := w.memoryTunnels(dp, base, target, steps, &conns)
	if err != nil {
		return err
	}
	g, err := dp.quitDump()
	if err != nil {
		return err
	}
	w.add(row{sec: memorySec, path: fmt.Sprintf("goroutines with %s idle tunnels", commas(int64(last))), conc: commas(int64(last)),
		result: fmt.Sprintf("%s goroutines (%.2f per tunnel)", commas(int64(g)), float64(g-base.goroutines)/float64(last))})
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	w.memoryPeers(target, steps)
	w.note("Scenario 3: each tunnel is CONNECT to the plain origin port (no TLS probe), answered 200 and then left idle. RSS is VmRSS from /proc/PID/status read 1 s after the last tunnel opened; KiB/tunnel = (RSS − idle RSS)/tunnels. Goroutines are counted in the SIGQUIT dump (GOTRACEBACK=all) of the same process (the status endpoint does not report goroutines); the idle count comes from a second, fresh process. fds/tunnel counts /proc/PID/fd (client socket and upstream socket; the relay waits for readability in the netpoller and takes a splice(2) pipe only while bytes are queued, so an idle tunnel holds no pipe).")
	return nil
}

// memorySec is scenario 3's section in the results.
const memorySec = "3 memory"

// idleBase is an idle dual-proxy's reading that the tunnel rows are
// measured against: goroutines of a fresh process, RSS (KiB) and open fds.
type idleBase struct {
	goroutines, rssKiB, fds int
}

// memoryIdle reads the idle baseline: the goroutines of a fresh process
// (its SIGQUIT dump ends it), then RSS, threads and fds of the process the
// tunnels go to, which it returns running (the caller stops it; nil when
// it did not start). It adds the idle row and the curves' first points.
func (w *world) memoryIdle() (*proc, idleBase, error) {
	var base idleBase
	p0, err := w.startDualProxy("dp-mem0", "--upstream-host", "")
	if err != nil {
		return nil, base, err
	}
	time.Sleep(300 * time.Millisecond) // let start-up goroutines settle before the dump
	if base.goroutines, err = p0.quitDump(); err != nil {
		return nil, base, err
	}
	dp, err := w.startDualProxy("dp-mem", "--upstream-host", "")
	if err != nil {
		return nil, base, err
	}
	time.Sleep(300 * time.Millisecond) // settle before the idle reading
	rss0, thr0, err := dp.status()
	if err != nil {
		return dp, base, err
	}
	base.rssKiB, base.fds = rss0, countFDs(dp)
	w.point("idle-rss.svg", "Idle CONNECT tunnels: memory", "idle tunnels", "RSS (MiB)", false, "dual-proxy", 0, float64(rss0)/1024)
	w.point("idle-fds.svg", "Idle CONNECT tunnels: file descriptors", "idle tunnels", "open fds", false, "dual-proxy", 0, float64(base.fds))
	w.add(row{sec: memorySec, path: "dual-proxy idle (no tunnels)", result: fmt.Sprintf("%.1f MiB RSS, %d threads, %d goroutines, %d fds", float64(rss0)/1024, thr0, base.goroutines, base.fds),
		target: "≤ 15 MiB RSS", verdict: verdict(rss0 <= targetIdleRSSKiB)})
	return dp, base, nil
}

// tunnelSteps are the tunnel counts scenario 3 reads at: 1,000, 3,000 and
// 6,000 when below tunnels, then tunnels.
func tunnelSteps(tunnels int) []int {
	var steps []int
	for _, n := range []int{1000, 3000, 6000} {
		if n < tunnels {
			steps = append(steps, n)
		}
	}
	return append(steps, tunnels)
}

// memoryTunnels opens idle tunnels through dp up to each step (they stay
// in *conns, which the caller closes) and adds a row and curve points per
// step, measured against base. It returns the last step reached.
func (w *world) memoryTunnels(dp *proc, base idleBase, target string, steps []int, conns *[]net.Conn) (int, error) {
	var last int
	for _, n := range steps {
		t0 := time.Now()
		more, err := openIdle(dp.addr, target, n-len(*conns), 64)
		*conns = append(*conns, more...)
		if err != nil {
			return last, fmt.Errorf("opened %d of %d tunnels: %w", len(*conns), n, err)
		}
		openRate := float64(len(more)) / time.Since(t0).Seconds()
		time.Sleep(time.Second) // let the tunnels' goroutines park before reading RSS
		rss, thr, err := dp.status()
		if err != nil {
			return last, err
		}
		fds := countFDs(dp)
		per, fdPer := float64(rss-base.rssKiB)/float64(n), float64(fds-base.fds)/float64(n)
		w.add(row{sec: memorySec, path: fmt.Sprintf("dual-proxy with %s idle tunnels", commas(int64(n))), conc: commas(int64(n)),
			result: fmt.Sprintf("%.1f MiB RSS (%.1f KiB/tunnel), %d threads, %.1f fds/tunnel", float64(rss)/1024, per, thr, fdPer),
			p50:    fmt.Sprintf("opened at %s/s", commas(int64(openRate))), target: fmt.Sprintf("≤ %d KiB and ≤ %d fds per tunnel", targetPerTunnelKiB, targetFDsPerTunnel),
			verdict: verdict(per <= targetPerTunnelKiB && fdPer <= targetFDsPerTunnel)})
		w.point("idle-rss.svg", "", "", "", false, "dual-proxy", float64(n), float64(rss)/1024)
		w.point("idle-fds.svg", "", "", "", false, "dual-proxy", float64(n), float64(fds))
		fmt.Printf("  %d tunnels: RSS %d KiB (%.1f KiB/tunnel), threads %d, fds %d\n", n, rss, per, thr, fds)
		last = n
	}
	return last, nil
}

// memoryPeers measures the peers on the same curves: the minimal Go relay
// (io.Copy with a splice pipe per direction held for the tunnel's life)
// and squid, when it runs.
func (w *world) memoryPeers(target string, steps []int) {
	if rl, err := w.startRelay("relay-idle", false); err == nil {
		w.idlePeer(refSpliceName, rl, target, steps, 6, w.limit)
		rl.stop()
	}
	if sq := w.gw["squid"]; sq != nil {
		w.idlePeer("squid", sq, target, steps, 2, w.limit)
	}
}
