package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// poolConcs are the concurrent streams of scenario 7
// (-pool-streams).
var poolConcs = []int{1, 16, 64, 256}

// setPoolConcs sets poolConcs from a comma-separated list of positive
// integers.
func setPoolConcs(list string) error {
	var cs []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 4096 {
			return fmt.Errorf("%q is not a stream count (1 … 4096)", f)
		}
		cs = append(cs, n)
	}
	poolConcs = cs
	return nil
}

// Targets for the pool's streams (docs/BENCHMARKS.md).
const (
	targetPoolAddedTTFT = time.Millisecond // added TTFT p50 at 16 streams
	targetPoolTTFTRatio = 2.0              // TTFT p50 against direct's at 64 streams
)

// streamPath is one row set of scenario 7: how the client reaches the mock
// channel, the processes whose CPU is charged to it, and the direct row it
// is compared with (-1 for a direct row); ref marks the reference relay
// (no target).
type streamPath struct {
	name, series string
	t            streamTarget
	procs        []*proc
	base         int
	ref          bool
}

// streamAgg collects a path's rounds at one concurrency.
type streamAgg struct {
	ttft, delays []time.Duration
	roundP50     []float64 // TTFT p50 of each round, for the spread
	events, errs int
	cpu          time.Duration
	last         error
}

func (a *streamAgg) add(r streamRound, cpu time.Duration) {
	a.ttft, a.delays = append(a.ttft, r.ttft...), append(a.delays, r.delays...)
	s := slices.Clone(r.ttft)
	slices.Sort(s)
	a.roundP50 = append(a.roundP50, float64(percentile(s, 0.5)))
	a.events, a.errs, a.cpu = a.events+r.events, a.errs+r.errs, a.cpu+cpu
	if r.lastErr != nil {
		a.last = r.lastErr
	}
}

// poolStreaming is scenario 7: the model pool's own cost on streams. A
// mock channel (own process, poolmock.go) streams poolEvents
// stamped text deltas; clients call it directly and through dual-proxy's
// pool — same API (pass-through after the commit point) and translated both
// ways — at 1 … 256 concurrent streams, rounds interleaved
// across the paths. Rows: TTFT p50/p99 and per-event delay against direct,
// dual-proxy's CPU per streamed event.
func (w *world) poolStreaming() error {
	fmt.Println("scenario 7: pool streaming")
	mock, err := w.startStreamMock()
	if err != nil {
		return err
	}
	defer mock.stop()
	paths, stop, err := w.poolPaths(mock)
	defer stop()
	if err != nil {
		return err
	}
	for _, p := range paths { // a broken path is an error, not a row of failures
		var sc streamConn
		_, err := p.t.stream(&sc, append(p.t.head(len(p.t.body()), "bench-check"), p.t.body()...), nil)
		sc.close()
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
	}
	// 2 rounds with a window of ¾ -round keep the scenario near a minute
	// (six paths, four loads, each round also has its ramp and tail).
	rounds, window := min(w.ph.rounds, 2), max(w.ph.round*3/4, 200*time.Millisecond)
	for _, c := range poolConcs {
		aggs := make([]streamAgg, len(paths))
		for r := 0; r < rounds; r++ {
			for i, p := range paths {
				c0 := cpuNs(p.procs...)
				res := runStreams(p.t, c, window)
				aggs[i].add(res, cpuNs(p.procs...)-c0)

			}
		}
		w.poolRows(paths, aggs, c)
	}
	w.note("Scenario 7 (pool streaming, docs/benchmarks/pool-*.svg): a mock model channel (raw-socket Go, own process) answers every streaming call with its preamble at once, then %d text deltas, the first %v after the request and then every %v, each stamped with CLOCK_MONOTONIC as it is written (one write(2) per event, chunked, keep-alive); requests are %d KiB (a system prompt and one user turn) with an X-Session-Id per client. Rows: the client calls the mock directly, or dual-proxy's pool (`--config`, one member per pool, memory state) in the same API (Anthropic; pass-through after the commit point, SPEC POOL-7) or translated (SPEC POOL-21: an Anthropic client to a Chat Completions member, a Chat client to an Anthropic member). The p50/p99 cells are time to first token (TTFT: from the request, dial included when the client needs a new connection, to the first delta; every client keeps its connection while the answers allow it, and the mock, the reference relay and dual-proxy's own endpoints, SPEC HTTP-5b, all answer keep-alive); the result cell is the per-event delay (stamp to the client's read); vs direct is the TTFT p50 ratio against the direct row of the member's API; proxy CPU is dual-proxy's CPU (sum of its threads' /proc/PID/task/*/schedstat run time) per streamed delta, per-call work included.", poolEvents, poolFirst, poolInterval, poolRequestBytes>>10)
	w.note("Scenario 7 method: at each of %v concurrent streams, %d interleaved rounds per path; in a round each client starts its next call as soon as one ends, the clients start spread over one stream length (%v), calls starting in that ramp are not measured, the measured window is %v; percentiles are over all measured calls (TTFT) and deltas (delay) of the rounds, the spread is that of the rounds' TTFT p50. The reference row is a minimal Go streaming reverse proxy (net/http + httputil.ReverseProxy flushing every write, own process, keep-alive both sides): what any Go HTTP relay of the same stream costs here.", poolConcs, rounds, poolStreamLen, window)
	return nil
}

// poolPaths starts dual-proxy with a pool config for the mock and returns
// the rows' paths (with [B] rows under -compare) and the teardown.
func (w *world) poolPaths(mock *proc) ([]streamPath, func(), error) {
	cfg := filepath.Join(w.tmp, "pool-bench.yaml")
	yaml := fmt.Sprintf("channels:\n  an: {api: anthropic, base_url: 'http://%[1]s', api_key: sk-bench-anthropic-key}\n"+
		"  ch: {api: openai-chat, base_url: 'http://%[1]s/v1', api_key: sk-bench-chat-key}\n"+
		"pools:\n  pa: {members: [an]}\n  pc: {members: [ch]}\n", mock.addr)
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		return nil, func() {}, err
	}
	var procs []*proc
	stop := func() {
		for _, p := range procs {
			p.stop()
		}
	}
	direct := []streamPath{
		{"direct → mock channel (Anthropic)", "direct", streamTarget{mock.addr, "/v1/messages", apiAnthropic}, nil, -1, false},
		{"direct → mock channel (Chat)", "direct (Chat)", streamTarget{mock.addr, "/v1/chat/completions", apiChat}, nil, -1, false},
	}
	pooled := func(dp *proc, tag string) []streamPath {
		return []streamPath{
			{tag + "dual-proxy pool, Anthropic → Anthropic member", tag + "pool (same API)", streamTarget{dp.addr, "/pool/pa/v1/messages", apiAnthropic}, []*proc{dp}, 0, false},
			{tag + "dual-proxy pool, Anthropic client → Chat member (translated)", tag + "pool, Anthropic → Chat", streamTarget{dp.addr, "/pool/pc/v1/messages", apiAnthropic}, []*proc{dp}, 1, false},
			{tag + "dual-proxy pool, Chat client → Anthropic member (translated)", tag + "pool, Chat → Anthropic", streamTarget{dp.addr, "/pool/pa/v1/chat/completions", apiChat}, []*proc{dp}, 0, false},
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, stop, err
	}
	ref, err := w.startListening("sse-relay", exe, "-sserelay-serve", mock.addr)
	if err != nil {
		return nil, stop, err
	}
	procs = append(procs, ref)
	dp, err := w.startDualProxy("dp-pool", "--upstream-host", "", "--config", cfg)
	if err != nil {
		return nil, stop, err
	}
	procs = append(procs, dp)
	paths := append(direct, pooled(dp, "")...)
	paths = append(paths, streamPath{"reference: minimal Go streaming relay (httputil.ReverseProxy), Anthropic", "reference Go relay",
		streamTarget{ref.addr, "/v1/messages", apiAnthropic}, []*proc{ref}, 0, true})
	if w.compareBin != "" {
		b, err := w.startDualProxyBin(w.compareBin, "dp-pool-B", "--upstream-host", "", "--config", cfg)
		if err != nil {
			return nil, stop, err
		}
		procs = append(procs, b)
		paths = append(paths, pooled(b, "[B] ")...)
	}
	return paths, stop, nil
}

// startStreamMock runs the bench binary as scenario 7's mock channel
// (-poolmock-serve) in its own process.
func (w *world) startStreamMock() (*proc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return w.startListening("pool-mock", exe, "-poolmock-serve")
}

// poolRows adds scenario 7's rows and curve points for concurrency c.
func (w *world) poolRows(paths []streamPath, aggs []streamAgg, c int) {
	const sec = "7 pool streaming"
	type stats struct{ t50, t99, d50, d99 time.Duration }
	st := make([]stats, len(paths))
	for i := range aggs {
		slices.Sort(aggs[i].ttft)
		slices.Sort(aggs[i].delays)
		a := aggs[i]
		st[i] = stats{percentile(a.ttft, 0.5), percentile(a.ttft, 0.99), percentile(a.delays, 0.5), percentile(a.delays, 0.99)}
	}
	for i, p := range paths {
		a, s := aggs[i], st[i]
		rw := row{sec: sec, path: p.name, conc: strconv.Itoa(c), spread: fmt.Sprintf("±%.0f%%", spreadPct(a.roundP50)),
			p50: fmtDur(s.t50), p99: fmtDur(s.t99), result: "event delay p50 " + fmtDur(s.d50) + ", p99 " + fmtDur(s.d99)}
		if p.base >= 0 {
			b := st[p.base]
			rw.p50 += " (" + fmtSigned(s.t50-b.t50) + ")"
			rw.result = fmt.Sprintf("event delay p50 %s (%s), p99 %s (%s)", fmtDur(s.d50), fmtSigned(s.d50-b.d50), fmtDur(s.d99), fmtSigned(s.d99-b.d99))
			rw.vsDir = ratio(float64(s.t50), float64(b.t50))
			if a.events > 0 {
				rw.cpu = fmt.Sprintf("%.1f µs/event", float64(a.cpu.Nanoseconds())/1000/float64(a.events))
				w.point("pool-cpu.svg", "Pool streaming: dual-proxy CPU per streamed event", "concurrent streams", "user+system CPU (µs/event, per-call work included)", true, p.series, float64(c), float64(a.cpu.Nanoseconds())/1000/float64(a.events))
			}
			switch {
			case p.ref:
			case c == 16:
				rw.target = fmt.Sprintf("≤ +%d ms p50 TTFT", targetPoolAddedTTFT.Milliseconds())
				rw.verdict = verdict(s.t50-b.t50 <= targetPoolAddedTTFT)
			case c == 64:
				rw.target = fmt.Sprintf("≤ %.0f× direct TTFT", targetPoolTTFTRatio)
				rw.verdict = verdict(float64(s.t50) <= targetPoolTTFTRatio*float64(b.t50))
			}
		}
		if a.errs > 0 {
			w.note("%s, %s, %d streams: %d failed calls (last: %v).", sec, p.name, c, a.errs, a.last)
		}
		w.add(rw)
		w.point("pool-ttft.svg", "Pool streaming: time to first token (p50)", "concurrent streams", "TTFT p50 (ms)", true, p.series, float64(c), float64(s.t50.Microseconds())/1000)
		w.point("pool-delay.svg", "Pool streaming: per-event delay (p99)", "concurrent streams", "event delay p99 (ms)", true, p.series, float64(c), float64(s.d99.Microseconds())/1000)
		fmt.Printf("  %-62s c=%-3d TTFT p50 %-8s p99 %-8s delay p50 %-8s p99 %-8s %s\n", p.name, c, fmtDur(s.t50), fmtDur(s.t99), fmtDur(s.d50), fmtDur(s.d99), rw.cpu)
	}
}

// cpuNs is the CPU time the processes' threads have run so far, summed
// from /proc/PID/task/*/schedstat (nanoseconds; a thread that exited is
// lost, which Go's threads rarely do). Scenario 7's per-event figures are
// a few µs, below the 10 ms clock ticks of /proc/PID/stat; where
// schedstat is missing, cpuTime's ticks are used.
func cpuNs(ps ...*proc) time.Duration {
	var sum time.Duration
	for _, p := range ps {
		tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", p.cmd.Process.Pid))
		if err != nil || len(tasks) == 0 {
			sum += cpuTime(p)
			continue
		}
		for _, t := range tasks {
			b, err := os.ReadFile(t)
			if err != nil {
				continue
			}
			f := strings.Fields(string(b))
			if len(f) == 0 {
				continue
			}
			n, _ := strconv.ParseInt(f[0], 10, 64)
			sum += time.Duration(n)
		}
	}
	return sum
}
