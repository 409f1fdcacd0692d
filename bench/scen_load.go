package main

import (
	"fmt"
	"time"
)

// Target ratios and bounds of the benchmark table (docs/BENCHMARKS.md).
const (
	targetPlainVsSquid   = 2.5                    // dual-proxy direct path vs squid, req/s at c=32
	targetAddedP50       = 50 * time.Microsecond  // dual-proxy direct path vs direct, p50 at c=1
	targetReusedTunnel   = 0.65                   // requests inside open tunnels vs direct TLS keep-alive
	targetNewTunnel      = 0.75                   // new tunnel + TLS per request, per-host cache warm
	targetBulk           = 0.95                   // one tunnel bulk MB/s vs direct
	targetIdleRSSKiB     = 15 * 1024              // idle dual-proxy RSS
	targetPerTunnelKiB   = 16                     // RSS per idle tunnel
	targetFDsPerTunnel   = 2                      // fds per idle tunnel in dual-proxy (squid's figure)
	targetRefusedExtra   = 10 * time.Millisecond  // first gateway refuses
	targetBlackholeRaced = 400 * time.Millisecond // first gateway silent, racing on
	targetLauncher       = 10 * time.Millisecond  // dual-proxy run -- true vs true
	targetReady          = 20 * time.Millisecond  // exec to accepting
)

// named is one path in a comparison.
type named struct {
	name  string
	p     path
	procs []*proc // proxy processes whose CPU time is charged to this path
}

// group measures paths at conc with the rounds interleaved (the first
// round of every path, then the second …), so that drift in background load on the
// machine hits every path alike; the order within a round is serpentine
// (forward, then reversed), so a steady drift favours no path either.
// Each round has its own warm-up. Failed requests are noted.
func (w *world) group(sec string, paths []named, conc int, newConn bool) []loadResult {
	return w.groupRounds(sec, paths, conc, newConn, w.ph.rounds)
}

// groupRounds is group with rounds measured rounds per path.
func (w *world) groupRounds(sec string, paths []named, conc int, newConn bool, rounds int) []loadResult {
	samples := make([][]sample, len(paths))
	errs := make([]error, len(paths))
	one := phases{warm: w.ph.warm, round: w.ph.round, rounds: 1}
	cpu := make([]time.Duration, len(paths))
	for r := 0; r < rounds; r++ {
		for k := range paths {
			i := serpentine(r, k, len(paths))
			n := paths[i]
			var t0 time.Duration
			mark := func(round int) {
				if round == 1 {
					t0 = cpuTime(n.procs...)
				} else {
					cpu[i] += cpuTime(n.procs...) - t0
				}
			}
			s, err := load{p: n.p, conc: conc, newConn: newConn, target: "/", mark: mark}.run(one)
			samples[i] = append(samples[i], s...)
			if err != nil {
				errs[i] = err
			}
		}
	}
	res := make([]loadResult, len(paths))
	for i, n := range paths {
		r := summarize(samples[i])
		if ops := totalOps(samples[i]); ops > 0 && len(n.procs) > 0 {
			r.cpuPerOp = cpu[i] / time.Duration(ops)
		}
		if r.errs > 0 {
			w.note("%s, %s, c=%d: %d failed requests (last: %v).", sec, n.name, conc, r.errs, errs[i])
		}
		fmt.Printf("  %-50s c=%-3d %9.0f req/s  p50 %-8s p99 %-8s ±%.0f%%\n", n.name, conc, r.rps, fmtDur(r.p50), fmtDur(r.p99), r.spread)
		res[i] = r
	}
	return res
}

// fmtCPU prints CPU time per request; "" when not measured.
func fmtCPU(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return fmt.Sprintf("%.1f µs/req", float64(d.Nanoseconds())/1000)
}

func totalOps(s []sample) int {
	n := 0
	for _, x := range s {
		n += x.ops
	}
	return n
}

// plainHTTP is scenario 1: plain HTTP keep-alive, small answer, c=1 and
// c=32, direct vs dual-proxy (direct path) vs each real gateway vs
// dual-proxy with squid as its gateway.
func (w *world) plainHTTP() error {
	const sec = "1 plain HTTP"
	fmt.Println("scenario 1: plain HTTP keep-alive")
	org := w.origin.plainAddr()
	dp, err := w.startDualProxy("dp-direct", "--upstream-host", "")
	if err != nil {
		return err
	}
	defer dp.stop()
	paths := []named{
		{"direct", path{origin: org}, nil},
		{"dual-proxy (direct path)", path{proxy: dp.addr, origin: org}, []*proc{dp}},
	}
	for _, g := range realGateways {
		if p := w.gw[g.name]; p != nil {
			paths = append(paths, named{g.name, path{proxy: p.addr, origin: org}, []*proc{p}})
		}
	}
	if sq := w.gw["squid"]; sq != nil {
		dps, err := w.startDualProxy("dp-squid", "--upstream-url", "http://"+sq.addr, "--loopback-direct=false")
		if err != nil {
			return err
		}
		defer dps.stop()
		paths = append(paths, named{"dual-proxy → squid", path{proxy: dps.addr, origin: org}, []*proc{dps, sq}})
	}
	// Floor: the same keep-alive requests, cleartext, inside one
	// CONNECT tunnel per client through the minimal Go relay with a 32 KiB
	// read/write loop: one read(2) and one write(2) per direction per
	// request and no HTTP work, the least any Go forwarder pays here.
	ref, err := w.startRelay("relay-plain-floor", true)
	if err != nil {
		return err
	}
	defer ref.stop()
	paths = append(paths, named{refPlainName, path{proxy: ref.addr, origin: org, tunnel: true}, []*proc{ref}})
	if w.compareBin != "" {
		b, err := w.startDualProxyBin(w.compareBin, "dp-direct-B", "--upstream-host", "")
		if err != nil {
			return err
		}
		defer b.stop()
		paths = append(paths, named{"[B] dual-proxy (direct path)", path{proxy: b.addr, origin: org}, []*proc{b}})
	}
	for _, conc := range []int{1, 32} {
		res := map[string]loadResult{}
		for i, r := range w.group(sec, paths, conc, false) {
			res[paths[i].name] = r
		}
		dir, sq := res["direct"], res["squid"]
		for _, n := range paths {
			r := res[n.name]
			rw := row{sec: sec, path: n.name, conc: fmt.Sprint(conc), result: fmtRate(r.rps), spread: fmt.Sprintf("±%.0f%%", r.spread),
				p50: fmtDur(r.p50), p99: fmtDur(r.p99), cpu: fmtCPU(r.cpuPerOp)}
			if n.name != "direct" {
				rw.vsDir = ratio(r.rps, dir.rps)
				rw.p50 += fmt.Sprintf(" (+%d)", (r.p50 - dir.p50).Microseconds())
			}
			if _, ok := res["squid"]; ok && n.name != "squid" {
				rw.vsSquid = ratio(r.rps, sq.rps)
			}
			if n.name == "dual-proxy (direct path)" {
				if conc == 32 && sq.rps > 0 {
					rw.target = fmt.Sprintf("≥ %.1f× squid req/s", targetPlainVsSquid)
					rw.verdict = verdict(r.rps >= targetPlainVsSquid*sq.rps)
				}
				if conc == 1 {
					rw.target = fmt.Sprintf("≤ +%d µs p50", targetAddedP50.Microseconds())
					rw.verdict = verdict(r.p50-dir.p50 <= targetAddedP50)
				}
			}
			w.add(rw)
		}
	}
	w.awakeRows(paths)
	w.note("Scenario 1: p50 cells show the added latency against direct in µs in parentheses. tinyproxy closes the client connection after every plain request, so its rows include a new TCP connection per request.")
	w.note("Scenario 1 floor row (" + refPlainName + "): the same requests, cleartext, inside one CONNECT tunnel per client through the minimal Go relay of scenario 2 (32 KiB read/write loop, own process): one read(2) and one write(2) per direction per request and no HTTP parsing, routing or header work. Its proxy CPU is the least any Go forwarder pays per request on this machine.")
	return nil
}

// connect is scenario 2: requests inside reused tunnels, a new tunnel + TLS
// handshake per request (TLS probe on/off, cache warm), and one-tunnel bulk
// throughput.
//
// One piece: it is the scenario's script (start, measure each row, stop),
// every row sharing the deferred teardown of the same processes.
func (w *world) connect() error {
	fmt.Println("scenario 2: CONNECT")
	org := w.origin.tlsAddr()
	start := func(name string, args ...string) (*proc, error) {
		return w.startDualProxy(name, append([]string{"--upstream-host", ""}, args...)...)
	}
	dpLoop, err := start("dp-loopback")
	if err != nil {
		return err
	}
	defer dpLoop.stop()
	dpCache, err := start("dp-cache", "--loopback-direct=false")
	if err != nil {
		return err
	}
	defer dpCache.stop()
	dpNoProbe, err := start("dp-noprobe", "--no-verify-tls")
	if err != nil {
		return err
	}
	defer dpNoProbe.stop()
	tlsPath := func(proxy string) path { return path{proxy: proxy, origin: org, tls: true, tlsCfg: w.tlsCfg} }
	var squid, dpSquid *proc
	if squid = w.gw["squid"]; squid != nil {
		if dpSquid, err = w.startDualProxy("dp-squid", "--upstream-url", "http://"+squid.addr, "--loopback-direct=false"); err != nil {
			return err
		}
		defer dpSquid.stop()
	}

	// The other gateway kinds (https, SOCKS5), next to dual-proxy → squid.
	kinds, err := w.startKinds()
	defer kinds.stop()
	if err != nil {
		return err
	}
	kindRows := kinds.rows(tlsPath, squid)

	// Reference relays: the least any CONNECT relay in Go can cost here.
	refSplice, err := w.startRelay("relay-splice", false)
	if err != nil {
		return err
	}
	defer refSplice.stop()
	refBuf, err := w.startRelay("relay-copybuf", true)
	if err != nil {
		return err
	}
	defer refBuf.stop()
	refs := []named{{refSpliceName, path{proxy: refSplice.addr}, []*proc{refSplice}}, {refBufName, path{proxy: refBuf.addr}, []*proc{refBuf}}}

	var dpB *proc
	if w.compareBin != "" {
		if dpB, err = w.startDualProxyBin(w.compareBin, "dp-cache-B", "--upstream-host", "", "--loopback-direct=false"); err != nil {
			return err
		}
		defer dpB.stop()
	}

	cp := connectProcs{tlsPath: tlsPath, loop: dpLoop, cache: dpCache, noProbe: dpNoProbe, b: dpB, squid: squid, dpSquid: dpSquid,
		refSplice: refSplice, refs: refs, kinds: kindRows}
	w.connectReused(cp)
	w.connectFresh(cp)

	// 2c: bulk bytes through one tunnel.
	w.note("Reference rows: a minimal Go CONNECT relay written in the bench (parse CONNECT, dial, answer 200, copy both ways; no selection, no probe, no tracking), run as its own process (the bench binary with -relay-serve), once with io.Copy between the two TCP connections (splice(2), as dual-proxy does) and once with a 32 KiB Read/Write loop. They show what any Go relay costs on this machine.")
	return w.bulkRows(squid, dpLoop, refs)
}

const (
	refPlainName  = "reference: minimal Go relay, requests in a CONNECT tunnel (floor)"
	refSpliceName = "reference: minimal Go relay, io.Copy (splice)"
	refBufName    = "reference: minimal Go relay, 32 KiB read/write"
)

// bulkRows measures MB/s of one long GET /bulk: cleartext inside a tunnel
// and TLS inside a tunnel, direct vs dual-proxy vs squid.
func (w *world) bulkRows(squid, dp *proc, refs []named) error {
	for _, useTLS := range []bool{false, true} {
		sec, org := "2 one-tunnel bulk, cleartext", w.origin.plainAddr()
		if useTLS {
			sec, org = "2 one-tunnel bulk, TLS", w.origin.tlsAddr()
		}
		mk := func(proxy string) path {
			return path{proxy: proxy, origin: org, tls: useTLS, tunnel: proxy != "", tlsCfg: w.tlsCfg}
		}
		paths := []named{{"direct", mk(""), nil}, {"dual-proxy (direct path)", mk(dp.addr), []*proc{dp}}}
		if squid != nil {
			paths = append(paths, named{"squid", mk(squid.addr), []*proc{squid}})
		}
		for _, r := range refs {
			paths = append(paths, named{r.name, mk(r.p.proxy), r.procs})
		}
		var dirRate, sqRate float64
		rates := make([]float64, len(paths))
		spreads := make([]float64, len(paths))
		all := make([][]float64, len(paths))
		cpu, wall := make([]time.Duration, len(paths)), make([]time.Duration, len(paths))
		one := phases{warm: w.bulkPh.warm, round: w.bulkPh.round, rounds: 1}
		for r := 0; r < w.bulkPh.rounds; r++ { // interleaved, like group
			for i, n := range paths {
				c0, t0 := cpuTime(n.procs...), time.Now()
				x, err := bulk(n.p, one)
				if err != nil {
					return fmt.Errorf("%s %s: %w", sec, n.name, err)
				}
				cpu[i] += cpuTime(n.procs...) - c0
				wall[i] += time.Since(t0)
				all[i] = append(all[i], x...)
			}
		}
		for i, n := range paths {
			rates[i], spreads[i] = median(all[i]), spreadPct(all[i])
			fmt.Printf("  %-44s %9.0f MB/s ±%.0f%%\n", sec+" "+n.name, rates[i]/1e6, spreads[i])
			switch n.name {
			case "direct":
				dirRate = rates[i]
			case "squid":
				sqRate = rates[i]
			}
		}
		for i, n := range paths {
			rw := row{sec: sec, path: n.name, conc: "1", result: fmt.Sprintf("%.0f MB/s", rates[i]/1e6), spread: fmt.Sprintf("±%.0f%%", spreads[i])}
			if len(n.procs) > 0 {
				rw.cpu = fmt.Sprintf("%.0f%% of a core", 100*cpu[i].Seconds()/wall[i].Seconds())
			}
			if i > 0 {
				rw.vsDir = ratio(rates[i], dirRate)
			}
			if sqRate > 0 && n.name != "squid" {
				rw.vsSquid = ratio(rates[i], sqRate)
			}
			if n.name == "dual-proxy (direct path)" {
				rw.target = fmt.Sprintf("≥ %.2f× direct", targetBulk)
				rw.verdict = verdict(rates[i] >= targetBulk*dirRate)
			}
			w.add(rw)
		}
	}
	w.note("Bulk: one connection per round reads an endless GET /bulk answer (64 KiB writes) for %v after %v warm-up, %d interleaved rounds; MB = 10^6 bytes.", w.bulkPh.round, w.bulkPh.warm, w.bulkPh.rounds)
	return nil
}

// connectProcs are the processes and rows scenario 2 compares: the
// dual-proxy instances (direct path, cache warm, no probe, the -compare [B]
// binary), squid and dual-proxy in front of it when squid is installed, the
// reference relays and the other gateway kinds' rows.
type connectProcs struct {
	tlsPath                   func(proxy string) path
	loop, cache, noProbe, b   *proc
	squid, dpSquid, refSplice *proc
	refs, kinds               []named
}

// connectReused is 2a: keep-alive HTTPS inside tunnels that stay open. The
// rows a target compares (direct, dual-proxy, the reference relays, [B])
// come first, so that they are measured back to back in every round and
// their per-round ratios share the machine's load (paired.go).
func (w *world) connectReused(cp connectProcs) {
	sec := "2 reused tunnel (HTTPS keep-alive)"
	reused := []named{{"direct TLS", cp.tlsPath(""), nil}, {"dual-proxy (direct path)", cp.tlsPath(cp.loop.addr), []*proc{cp.loop}}}
	for _, r := range cp.refs {
		reused = append(reused, named{r.name, cp.tlsPath(r.p.proxy), r.procs})
	}
	if cp.b != nil {
		reused = append(reused, named{"[B] dual-proxy (direct path)", cp.tlsPath(cp.b.addr), []*proc{cp.b}})
	}
	if cp.squid != nil {
		reused = append(reused, named{"squid", cp.tlsPath(cp.squid.addr), []*proc{cp.squid}}, named{"dual-proxy → squid", cp.tlsPath(cp.dpSquid.addr), []*proc{cp.dpSquid, cp.squid}})
	}
	reused = append(reused, cp.kinds...)
	// Twice the rounds: this verdict is the closest of the run.
	w.compare(sec, reused, 32, false, "dual-proxy (direct path)", targetReusedTunnel, 2*w.ph.rounds)
}

// connectFresh is 2b: a new tunnel + TLS handshake + one request per
// operation; the compared rows first, as in 2a.
func (w *world) connectFresh(cp connectProcs) {
	sec := "2 new tunnel + TLS per request"
	fresh := []named{
		{"direct TLS", cp.tlsPath(""), nil},
		{"dual-proxy, cache warm (probe skipped)", cp.tlsPath(cp.cache.addr), []*proc{cp.cache}},
		{refSpliceName, cp.tlsPath(cp.refSplice.addr), []*proc{cp.refSplice}},
	}
	if cp.b != nil {
		fresh = append(fresh, named{"[B] dual-proxy, cache warm (probe skipped)", cp.tlsPath(cp.b.addr), []*proc{cp.b}})
	}
	fresh = append(fresh,
		named{"dual-proxy, --no-verify-tls", cp.tlsPath(cp.noProbe.addr), []*proc{cp.noProbe}},
		named{"dual-proxy, loopback default (probe every tunnel)", cp.tlsPath(cp.loop.addr), []*proc{cp.loop}})
	if cp.squid != nil {
		fresh = append(fresh, named{"squid", cp.tlsPath(cp.squid.addr), []*proc{cp.squid}}, named{"dual-proxy → squid, cache warm", cp.tlsPath(cp.dpSquid.addr), []*proc{cp.dpSquid, cp.squid}})
	}
	fresh = append(fresh, cp.kinds...)
	w.compare(sec, fresh, w.newConc, true, "dual-proxy, cache warm (probe skipped)", targetNewTunnel, w.ph.rounds)
	w.note("Scenario 2: a new tunnel costs client→proxy TCP, CONNECT, proxy→origin TCP, the client's TLS handshake and one request; with the probe, dual-proxy also opens a second path and runs a full TLS handshake of its own first. Loopback destinations are dialled direct without consulting the per-host cache (SPEC GW-5), so with default flags every CONNECT to 127.0.0.1:443 is probed; --loopback-direct=false (only candidate: direct) shows the cache-warm case, where ORD-4 skips the probe.")
}
