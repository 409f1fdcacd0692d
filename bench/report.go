package main

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

// row is one line of the results table. Empty cells print as "–".
type row struct {
	sec     string // scenario number and name
	path    string // what the client talks to
	conc    string // concurrency
	result  string // main result with unit (median of the rounds)
	spread  string // (max-min)/median of the rounds, ±%
	p50     string
	p99     string
	vsDir   string // ratio against the direct row
	vsSquid string // ratio against squid alone
	cpu     string // CPU time of the proxy processes per operation
	target  string
	verdict string // PASS, MISS or "" (no target)
}

// verdict returns "PASS" when ok, else "MISS".
func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "MISS"
}

// loadResult is the median over rounds of one load configuration.
type loadResult struct {
	rps      float64 // requests per second, median of rounds
	spread   float64 // (max-min)/median of req/s, in percent
	p50, p99 time.Duration
	errs     int
	cpuPerOp time.Duration // CPU time of the proxy processes per request; 0 = not measured
	perRound []float64     // req/s of each round, in round order (paired.go)
}

// summarize reduces the rounds of one load to medians.
func summarize(s []sample) loadResult {
	var rps, p50, p99 []float64
	var r loadResult
	for _, x := range s {
		rps = append(rps, float64(x.ops)/x.elapsed.Seconds())
		slices.Sort(x.lat)
		p50 = append(p50, float64(percentile(x.lat, 0.50)))
		p99 = append(p99, float64(percentile(x.lat, 0.99)))
		r.errs += x.errs
	}
	r.rps = median(rps)
	r.perRound = rps
	r.spread = spreadPct(rps)
	r.p50 = time.Duration(median(p50))
	r.p99 = time.Duration(median(p99))
	return r
}

// percentile returns the q-quantile (0..1) of sorted, nearest-rank; 0 for
// an empty slice.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// median of xs (mean of the middle two for even lengths); NaN when empty.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// spreadPct is (max-min)/median in percent; 0 for fewer than two values.
func spreadPct(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	m := median(xs)
	if m == 0 {
		return 0
	}
	return (slices.Max(xs) - slices.Min(xs)) / m * 100
}

// fmtDur prints d in µs below 10 ms, else in ms.
func fmtDur(d time.Duration) string {
	if d <= 0 {
		return "–"
	}
	if d < 10*time.Millisecond {
		return fmt.Sprintf("%d µs", d.Microseconds())
	}
	return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000)
}

// fmtRate prints a request rate with thousands separators.
func fmtRate(x float64) string { return commas(int64(math.Round(x))) + " req/s" }

func commas(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + commas(-n)
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func ratio(a, b float64) string {
	if b == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return "–"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

func cell(s string) string {
	if s == "" {
		return "–"
	}
	return strings.ReplaceAll(s, "|", `\|`)
}

// table renders rows as one markdown table.
func table(rows []row) string {
	var b strings.Builder
	b.WriteString("| scenario | path | c | result (median) | spread | p50 | p99 | vs direct | vs squid | proxy CPU | target | verdict |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			cell(r.sec), cell(r.path), cell(r.conc), cell(r.result), cell(r.spread), cell(r.p50), cell(r.p99),
			cell(r.vsDir), cell(r.vsSquid), cell(r.cpu), cell(r.target), cell(r.verdict))
	}
	return b.String()
}

// glance is the list of targets of this run with their verdicts, ahead of
// the full table: one line per row that has a target, and the count of
// PASS and MISS. It is empty when no row has a target.
func glance(rows []row) string {
	var b strings.Builder
	pass, miss := 0, 0
	for _, r := range rows {
		if r.target == "" || r.verdict == "" {
			continue
		}
		// A row may carry two targets ("PASS; MISS"): count each.
		pass += strings.Count(r.verdict, "PASS")
		miss += strings.Count(r.verdict, "MISS")
		m := r.result
		for _, x := range []string{r.p50, r.vsDir, r.vsSquid} {
			if x != "" && x != "–" && x != "-" {
				m += "; " + x
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", cell(r.sec), cell(r.path), cell(r.conc), cell(r.target), cell(m), cell(r.verdict))
	}
	if pass+miss == 0 {
		return ""
	}
	return fmt.Sprintf("Targets in this run: %d PASS, %d MISS (the full table follows).\n\n", pass, miss) +
		"| scenario | path | c | target | measured (result; p50; vs direct; vs squid) | verdict |\n|---|---|---:|---|---|---|\n" +
		b.String() + "\n"
}

// machine describes the host for the document header.
func machine() string {
	cpu := ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				_, cpu, _ = strings.Cut(l, ":")
				cpu = strings.TrimSpace(cpu)
				break
			}
		}
	}
	return fmt.Sprintf("%d cores (GOMAXPROCS %d, %s), %s, %s/%s, %s",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), cpu, kernelName(), runtime.GOOS, runtime.GOARCH, runtime.Version())
}

// loadAvg returns the 1-minute load average from /proc/loadavg.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " / ")
}

// chartDir is where -write puts the SVG curves, relative to
// docs/BENCHMARKS.md; the results directory has them beside its copy.
const chartDir = "benchmarks"

// keepMarker starts the hand-written part of docs/BENCHMARKS.md that a new
// run keeps. A previous file's marker line is found by keepMarkerPrefix, so
// a change of the command it names keeps the notes.
const (
	keepMarker       = "<!-- hand-written notes below this line are kept by `cd bench && go run . -write` -->"
	keepMarkerPrefix = "<!-- hand-written notes below this line are kept by "
)

// keptNotes returns the hand-written part of prev: everything after the
// line that starts with keepMarkerPrefix ("" when there is none).
func keptNotes(prev string) string {
	i := strings.Index(prev, "\n"+keepMarkerPrefix)
	if i < 0 {
		return ""
	}
	_, tail, ok := strings.Cut(prev[i+1:], "\n")
	if !ok {
		return ""
	}
	return tail
}

// document renders the whole docs/BENCHMARKS.md: header, table, method
// notes, and the hand-written tail of the previous file (after keepMarker).
func document(prev string, when time.Time, facts []string, rows []row, notes []string, charts []*chart, elapsed time.Duration) string {
	var b strings.Builder
	b.WriteString("# Benchmarks\n\n")
	b.WriteString("Generated by `cd bench && go run . -write` (see `bench/README.md`). All traffic on loopback; load generator, origin,\n")
	b.WriteString("proxies and gateways share the same cores, so absolute numbers are low and ratios are what matter.\n\n")
	fmt.Fprintf(&b, "- Date: %s\n", when.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "- Machine: %s\n", machine())
	for _, f := range facts {
		b.WriteString("- " + f + "\n")
	}
	fmt.Fprintf(&b, "- Whole run: %.0f s\n\n", elapsed.Seconds())
	b.WriteString(glance(rows))
	b.WriteString(table(rows))
	if len(charts) > 0 {
		b.WriteString("\n## How cost grows\n\n")
		for _, c := range charts {
			fmt.Fprintf(&b, "![%s](%s/%s)\n", c.title, chartDir, c.file)
		}
	}
	b.WriteString("\n## How it was measured\n\n")
	for _, n := range notes {
		b.WriteString("- " + n + "\n")
	}
	b.WriteString("\n" + keepMarker + "\n")
	b.WriteString(keptNotes(prev))
	return b.String()
}
