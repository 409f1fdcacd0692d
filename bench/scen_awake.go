package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
)

// secAwake is the section of scenario 1's diagnostic rows.
const secAwake = "1 plain HTTP, cores kept awake (diagnostic)"

// awakeRows measures the c=1 rows of scenario 1 again while idle-priority
// spinners keep every core busy, and adds them without a target.
//
// Why: at c=1 every hop of a request wakes a process on a core that has
// gone idle, and on a virtual machine an idle vCPU halts, so each wake-up
// costs a round trip through the hypervisor. The floor relay pays it as
// much as dual-proxy; the spinners (SCHED_IDLE with chrt, else nice 19:
// they run only when nothing else wants the core) keep the vCPUs from
// halting, so these rows show the latency the proxies themselves add. The
// verdict stays on scenario 1's own c=1 row, measured without them.
func (w *world) awakeRows(all []named) {
	var paths []named
	for _, n := range all {
		switch n.name {
		case "direct", "dual-proxy (direct path)", "squid", refPlainName, "[B] dual-proxy (direct path)":
			paths = append(paths, n)
		}
	}
	sp, err := startSpinners()
	if err != nil {
		w.note("Scenario 1 diagnostic rows skipped: %v.", err)
		return
	}
	defer sp.stop()
	res := w.group(secAwake, paths, 1, false)
	dir := res[0] // paths[0] is direct
	var sq loadResult
	for i, n := range paths {
		if n.name == "squid" {
			sq = res[i]
		}
	}
	for i, n := range paths {
		r := res[i]
		rw := row{sec: secAwake, path: n.name, conc: "1", result: fmtRate(r.rps), spread: fmt.Sprintf("±%.0f%%", r.spread),
			p50: fmtDur(r.p50), p99: fmtDur(r.p99), cpu: fmtCPU(r.cpuPerOp)}
		if i > 0 {
			rw.vsDir = ratio(r.rps, dir.rps)
			rw.p50 += fmt.Sprintf(" (+%d)", (r.p50 - dir.p50).Microseconds())
		}
		if sq.rps > 0 && n.name != "squid" {
			rw.vsSquid = ratio(r.rps, sq.rps)
		}
		w.add(rw)
	}
	w.note("Scenario 1 diagnostic rows (%s): the c=1 rows again while %s (%d spinners, one per core; they run only when no other process wants the core) keep the vCPUs from halting when idle. The difference to scenario 1's c=1 rows is the cost of waking an idle vCPU at each hop, which the floor relay pays as much as dual-proxy; these rows carry no verdict.", secAwake, sp.how, runtime.NumCPU())
}

// spinners is the process that keeps the cores busy at idle priority.
type spinners struct {
	*proc
	how string // "SCHED_IDLE (chrt --idle 0)" or "nice 19"
}

// startSpinners starts the bench binary with -spin-serve under chrt
// --idle 0 (SCHED_IDLE), or nice -n 19 when chrt is missing. Errors: no
// chrt and no nice, or the start failed.
func startSpinners() (*spinners, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	if c, err := exec.LookPath("chrt"); err == nil {
		p, err := start(os.Environ(), nil, c, "--idle", "0", exe, "-spin-serve")
		return &spinners{p, "SCHED_IDLE (chrt --idle 0)"}, err
	}
	if n, err := exec.LookPath("nice"); err == nil {
		p, err := start(os.Environ(), nil, n, "-n", "19", exe, "-spin-serve")
		return &spinners{p, "nice 19"}, err
	}
	return nil, errors.New("neither chrt nor nice found")
}

// serveSpin busy-loops on every core until the process is killed (the
// -spin-serve child of startSpinners).
func serveSpin() {
	n := runtime.NumCPU()
	runtime.GOMAXPROCS(n)
	for i := 0; i < n; i++ {
		go func() {
			for x := uint64(0); ; x++ {
				if x == 0 {
					runtime.Gosched()
				}
			}
		}()
	}
	select {}
}
