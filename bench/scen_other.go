package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"time"
)

func countFDs(p *proc) int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	return len(ents)
}

// failover is scenario 4: time to a successful HTTPS response through a
// fresh dual-proxy process whose first gateway refuses, is silent
// (blackhole; racing on and off), or was cached and died; against the same
// request when the first gateway works.
//
// One piece: it is the scenario's script (start, measure each row, stop),
// every row sharing the deferred teardown of the same processes and
// gateways.
func (w *world) failover() error {
	const sec = "4 failover"
	fmt.Println("scenario 4: failover")
	good, err := newGoGateway("127.0.0.1:0", false)
	if err != nil {
		return err
	}
	good.plainTo = w.origin.plainAddr()
	defer good.kill()
	hole, err := newGoGateway("127.0.0.1:0", true)
	if err != nil {
		return err
	}
	defer hole.kill()
	cached, err := newGoGateway("127.0.0.1:0", false)
	if err != nil {
		return err
	}
	defer func() { cached.kill() }()
	refused, err := refusedAddr()
	if err != nil {
		return err
	}
	const attempts = 5

	base, err := w.failoverAttempts(gatewayArgs(good.addr), nil, attempts)
	if err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	ref, err := w.failoverAttempts(gatewayArgs(refused, good.addr), nil, attempts)
	if err != nil {
		return fmt.Errorf("refused: %w", err)
	}
	raced, err := w.failoverAttempts(gatewayArgs(hole.addr, good.addr), nil, attempts)
	if err != nil {
		return fmt.Errorf("blackhole raced: %w", err)
	}
	unraced, err := w.failoverAttempts(append(gatewayArgs(hole.addr, good.addr), "--race-delay-ms", "0", "--timeout-ms", "1000"), nil, 2)
	if err != nil {
		return fmt.Errorf("blackhole not raced: %w", err)
	}
	plainFirst, err := w.failoverPlain(w.dpBin, gatewayArgs(hole.addr, good.addr), 1, attempts)
	if err != nil {
		return fmt.Errorf("blackhole, plain HTTP: %w", err)
	}
	plainHosts, err := w.failoverPlain(w.dpBin, gatewayArgs(hole.addr, good.addr), 10, 3)
	if err != nil {
		return fmt.Errorf("blackhole, plain HTTP, 10 hosts: %w", err)
	}
	warmT, diedT, err := w.cachedGatewayDies(cached, good.addr, attempts)
	if err != nil {
		return err
	}

	mb := medianDur(base)
	w.addFailoverRow(sec, "first gateway works (baseline, cold cache)", base, mb, "", nil)
	okRef := medianDur(ref)-mb <= targetRefusedExtra
	w.addFailoverRow(sec, "first gateway refuses", ref, mb, "≤ +10 ms vs baseline", &okRef)
	okRace := medianDur(raced) <= targetBlackholeRaced
	w.addFailoverRow(sec, "first gateway blackholed, racing on (250 ms)", raced, mb, "≤ 400 ms", &okRace)
	w.addFailoverRow(sec, "first gateway blackholed, racing off, --timeout-ms 1000", unraced, mb, "", nil)
	okPlain := medianDur(plainFirst) <= targetBlackholeRaced
	w.addFailoverRow(sec, "silent gateway, plain HTTP, first request", plainFirst, mb, "≤ 400 ms", &okPlain)
	okHosts := slices.Max(plainHosts) <= targetBlackholeRaced
	w.addFailoverRow(sec, "silent gateway, plain HTTP, 10 new hosts (each)", plainHosts, mb, "≤ 400 ms each", &okHosts)
	if w.compareBin != "" {
		// The -compare binary's rows: the same cases, side by side in
		// this run. A binary that does not race plain requests waits its
		// response timeout, bounded here to fit the 5 s operation deadline.
		bBase, err := w.failoverAttemptsBin(w.compareBin, gatewayArgs(good.addr), nil, attempts)
		if err != nil {
			return fmt.Errorf("[B] baseline: %w", err)
		}
		bRaced, err := w.failoverAttemptsBin(w.compareBin, gatewayArgs(hole.addr, good.addr), nil, attempts)
		if err != nil {
			return fmt.Errorf("[B] blackhole raced: %w", err)
		}
		bPlain, err := w.failoverPlain(w.compareBin, append(gatewayArgs(hole.addr, good.addr), "--response-timeout-ms", "2000"), 1, 2)
		if err != nil {
			return fmt.Errorf("[B] blackhole, plain HTTP: %w", err)
		}
		bmb := medianDur(bBase)
		w.addFailoverRow(sec, "[B] first gateway works (baseline, cold cache)", bBase, bmb, "", nil)
		w.addFailoverRow(sec, "[B] first gateway blackholed, racing on (250 ms)", bRaced, bmb, "", nil)
		w.addFailoverRow(sec, "[B] silent gateway, plain HTTP, first request, --response-timeout-ms 2000", bPlain, bmb, "", nil)
	}
	mw := medianDur(warmT)
	w.addFailoverRow(sec, "cached gateway alive (baseline, cache warm)", warmT, mw, "", nil)
	w.addFailoverRow(sec, "cached gateway died (refuses now)", diedT, mw, "", nil)
	w.note("Scenario 4's plain-HTTP rows: a fresh dual-proxy process per attempt with [silent, working] gateways; each request is `GET http://hN.test/` with a host name not seen before by that process (one per attempt for \"first request\", ten in a row for \"10 new hosts\", each row entry one request), forwarded by the working gateway to the bench's plain origin; before racing, each such request waited the whole --response-timeout-ms (60 s).")
	w.note("Scenario 4: every attempt is a fresh dual-proxy process (empty per-host cache, no cooldown) with --loopback-direct=false; the request is CONNECT 127.0.0.1:443 + TLS + GET through it (so the TLS probe runs on a cold cache), timed from the client's dial to the answer. Gateways here are a minimal Go CONNECT gateway so a gateway can die and come back on the same port at once (squid needs 1-2 s). \"extra\" is against the baseline row above it. Without racing a silent gateway costs --timeout-ms (default 5000).")
	return nil
}

// failoverPath is one CONNECT + TLS + GET to the TLS origin through proxy.
func (w *world) failoverPath(proxy string) path {
	return path{proxy: proxy, origin: w.origin.tlsAddr(), tls: true, tlsCfg: w.tlsCfg}
}

// failoverAttempts runs n attempts; each starts a fresh dual-proxy with args
// (empty cache, no cooldowns), runs before when set, and times one request.
func (w *world) failoverAttempts(args []string, before func(dpAddr string) error, n int) ([]time.Duration, error) {
	return w.failoverAttemptsBin(w.dpBin, args, before, n)
}

// failoverPlain times plain-HTTP requests through a fresh dual-proxy (bin)
// with args, n times over: each process serves hosts requests, each to a
// host name it has not seen (h0.test, h1.test …), one after another.
func (w *world) failoverPlain(bin string, args []string, hosts, n int) ([]time.Duration, error) {
	var out []time.Duration
	for i := 0; i < n; i++ {
		dp, err := w.startDualProxyBin(bin, "dp-failover-plain", append([]string{"--loopback-direct=false"}, args...)...)
		if err != nil {
			return nil, err
		}
		for h := 0; h < hosts; h++ {
			d, err := once(path{proxy: dp.addr, origin: fmt.Sprintf("h%d.test", h)})
			if err != nil {
				dp.stop()
				return nil, fmt.Errorf("host %d: %w", h, err)
			}
			out = append(out, d)
		}
		dp.stop()
	}
	return out, nil
}

// failoverAttemptsBin is failoverAttempts with the dual-proxy binary bin.
func (w *world) failoverAttemptsBin(bin string, args []string, before func(dpAddr string) error, n int) ([]time.Duration, error) {
	var out []time.Duration
	for i := 0; i < n; i++ {
		dp, err := w.startDualProxyBin(bin, "dp-failover", append([]string{"--loopback-direct=false"}, args...)...)
		if err != nil {
			return nil, err
		}
		if before != nil {
			if err := before(dp.addr); err != nil {
				dp.stop()
				return nil, err
			}
		}
		d, err := once(w.failoverPath(dp.addr))
		dp.stop()
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// cachedGatewayDies times, n times over, a warm request through the cached
// gateway and the first request after that gateway died (it refuses now),
// with good as the second gateway; the cached gateway is started again on
// its port for the next attempt.
func (w *world) cachedGatewayDies(cached *goGateway, good string, n int) (warm, died []time.Duration, err error) {
	for i := 0; i < n; i++ {
		var warmD time.Duration
		addr := cached.addr
		d, err := w.failoverAttempts(gatewayArgs(addr, good), func(dpAddr string) error {
			if _, err := once(w.failoverPath(dpAddr)); err != nil {
				return err
			}
			var err error
			if warmD, err = once(w.failoverPath(dpAddr)); err != nil {
				return err
			}
			cached.kill()
			return nil
		}, 1)
		if err != nil {
			return nil, nil, fmt.Errorf("cached gateway dies: %w", err)
		}
		warm, died = append(warm, warmD), append(died, d[0])
		if err := cached.listen(addr); err != nil {
			return nil, nil, fmt.Errorf("restart cached gateway: %w", err)
		}
	}
	return warm, died, nil
}

// gatewayArgs are the flags for first as the upstream and more as further
// gateways, in that order.
func gatewayArgs(first string, more ...string) []string {
	a := []string{"--upstream-url", "http://" + first}
	for _, m := range more {
		a = append(a, "--gateway", m)
	}
	return a
}

// medianDur is the median of ds.
func medianDur(ds []time.Duration) time.Duration {
	xs := make([]float64, len(ds))
	for i, d := range ds {
		xs[i] = float64(d)
	}
	return time.Duration(median(xs))
}

// spreadDur is the spread of ds as the table shows it ("±12%").
func spreadDur(ds []time.Duration) string {
	xs := make([]float64, len(ds))
	for i, d := range ds {
		xs[i] = float64(d)
	}
	return fmt.Sprintf("±%.0f%%", spreadPct(xs))
}

// addFailoverRow adds the row of one failover case: its median time to the
// response, the extra against ref, the slowest attempt, and a verdict when
// ok is set.
func (w *world) addFailoverRow(sec, name string, ds []time.Duration, ref time.Duration, tgt string, ok *bool) {
	m := medianDur(ds)
	rw := row{sec: sec, path: name, conc: fmt.Sprint(len(ds)) + " attempts", result: "time to response " + fmtDur(m), spread: spreadDur(ds),
		p50: fmt.Sprintf("extra %s", fmtSigned(m-ref)), p99: "max " + fmtDur(slices.Max(ds)), target: tgt}
	if ok != nil {
		rw.verdict = verdict(*ok)
	}
	fmt.Printf("  %-44s %s (extra %s)\n", name, fmtDur(m), fmtSigned(m-ref))
	w.add(rw)
}

func fmtSigned(d time.Duration) string {
	if d < 0 {
		return "−" + fmtDur(-d)
	}
	if d == 0 {
		return "0"
	}
	return "+" + fmtDur(d)
}

// launcher is scenario 5: wall time of `dual-proxy run --health-url ” --
// true` against `true`, and of exec to the first accepted connection. With
// -compare the second binary's rows ([B]) are measured in the same
// interleaved runs: true, dual-proxy, [B], true, dual-proxy, [B] …
func (w *world) launcher() error {
	const sec = "5 launcher"
	fmt.Println("scenario 5: launcher overhead")
	truePath, err := exec.LookPath("true")
	if err != nil {
		return err
	}
	const runs = 15
	bins := []string{w.dpBin}
	if w.compareBin != "" {
		bins = append(bins, w.compareBin)
	}
	argvs := [][]string{{truePath}}
	for _, b := range bins {
		argvs = append(argvs, []string{b, "run", "--listen-port", "0", "--health-url", "", "--", truePath})
	}
	times := make([][]float64, len(argvs))
	for i := 0; i < runs+1; i++ {
		for j, argv := range argvs {
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Env = childEnv(w.tmp)
			t0 := time.Now()
			if b, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("%v: %v %s", argv, err, b)
			}
			if i > 0 { // the first run warms the page cache
				times[j] = append(times[j], float64(time.Since(t0)))
			}
		}
	}
	mt := time.Duration(median(times[0]))
	w.add(row{sec: sec, path: "true", conc: fmt.Sprint(runs) + " runs", result: fmtDur(mt), spread: fmt.Sprintf("±%.0f%%", spreadPct(times[0]))})
	for j := range bins {
		md := time.Duration(median(times[j+1]))
		rw := row{sec: sec, path: "dual-proxy run --health-url '' -- true", conc: fmt.Sprint(runs) + " runs", result: fmtDur(md),
			spread: fmt.Sprintf("±%.0f%%", spreadPct(times[j+1])), p50: "overhead " + fmtSigned(md-mt)}
		if j == 0 { // [B] rows get no verdict, as in the other scenarios
			rw.target, rw.verdict = fmt.Sprintf("≤ %d ms overhead", targetLauncher.Milliseconds()), verdict(md-mt <= targetLauncher)
		} else {
			rw.path = "[B] " + rw.path
		}
		w.add(rw)
		fmt.Printf("  true %s, %s %s\n", fmtDur(mt), rw.path, fmtDur(md))
	}
	ready := make([][]float64, len(bins))
	for i := 0; i < runs+1; i++ {
		for j, b := range bins {
			d, err := w.readyAfterExec(b)
			if err != nil {
				return err
			}
			if i > 0 {
				ready[j] = append(ready[j], float64(d))
			}
		}
	}
	for j := range bins {
		mr := time.Duration(median(ready[j]))
		rw := row{sec: sec, path: "dual-proxy: exec to first accepted connection", conc: fmt.Sprint(runs) + " runs", result: fmtDur(mr),
			spread: fmt.Sprintf("±%.0f%%", spreadPct(ready[j]))}
		if j == 0 {
			rw.target, rw.verdict = fmt.Sprintf("≤ %d ms", targetReady.Milliseconds()), verdict(mr <= targetReady)
		} else {
			rw.path = "[B] " + rw.path
		}
		w.add(rw)
	}
	w.note("Scenario 5 ready: fork+exec of dual-proxy on a free port, then a loopback dial every 200 µs until one connects; median of %d runs after one warm-up.", runs)
	w.note("Scenario 5: wall time from fork to exit, median of %d runs after one warm-up run, the rows' runs interleaved; --listen-port 0 so parallel runs cannot collide on 7896.", runs)
	return nil
}

// readyAfterExec starts the dual-proxy binary bin on a free port and returns
// the time from exec until a TCP connection to it succeeds.
func (w *world) readyAfterExec(bin string) (time.Duration, error) {
	port, err := freePort()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(bin, "--listen-port", fmt.Sprint(port), "--health-url", "", "--upstream-host", "")
	cmd.Env = childEnv(w.tmp)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	for time.Since(t0) < 5*time.Second {
		if c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond); err == nil {
			d := time.Since(t0)
			c.Close()
			return d, nil
		}
		time.Sleep(200 * time.Microsecond) // polling interval of the measurement, not synchronisation
	}
	return 0, fmt.Errorf("dual-proxy on %s: not accepting 5 s after exec", addr)
}
