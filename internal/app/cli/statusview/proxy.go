// Package statusview renders what `dual-proxy status` and `dual-proxy pool
// test` print from the documents a running instance answers: the proxy's
// verdict line and tables, the pools' verdicts and members, and a pool test's
// result. It fetches nothing.
package statusview

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/app/settings"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/statusdoc"
)

// phaseWords says a failure phase in words, as the status page
// does; the code goes beside it.
var phaseWords = map[string]string{
	string(candidate.PhaseGatewayConnect):  "cannot connect to the gateway",
	string(candidate.PhaseGatewayTLS):      "TLS to the https gateway failed",
	string(candidate.PhaseSOCKSHandshake):  "the SOCKS5 handshake with the gateway failed",
	string(candidate.PhaseLocal):           "local resource error",
	string(candidate.PhaseConnectResponse): "the gateway refused the tunnel",
	string(candidate.PhaseTLSProbe):        "TLS handshake through the path failed",
	string(candidate.PhaseOriginConnect):   "cannot connect to the destination",
	string(candidate.PhaseResponseHeader):  "no response head in time",
	string(candidate.PhaseStream):          "the answer broke off",
}

// Verdict is the one line above a proxy's status (as on its page): the path
// serving, how many paths are proven (a success or a passing health check)
// and untried, and what fails since when.
func Verdict(st *statusdoc.Status) string {
	healthFailed, healthPassed := map[string]string{}, map[string]bool{}
	for _, r := range st.Health.Results {
		if !r.Alive {
			if !st.Health.TargetDown { // a target down on every path blames none
				healthFailed[r.Candidate] = r.Reason
			}
		} else {
			healthPassed[r.Candidate] = true
		}
	}
	// since: the first failed attempt of a candidate after its last success.
	since := map[string]string{}
	serving, last := "", ""
	for _, d := range st.Decisions {
		for _, f := range d.Failed {
			if _, ok := since[f.Candidate]; !ok {
				since[f.Candidate] = d.Time.Local().Format("15:04:05")
			}
		}
		if d.Candidate != "" {
			delete(since, d.Candidate)
			serving, last = d.Candidate, d.Time.Local().Format("15:04:05")
		}
	}
	parts := []string{"no requests yet"}
	if serving != "" {
		parts[0] = fmt.Sprintf("serving via %s (last request %s)", serving, last)
	}
	var failing []string
	proven := 0
	for _, c := range st.Candidates {
		_, hf := healthFailed[c.Candidate]
		if c.State != statusdoc.StateCooling && c.State != statusdoc.StateFailing && !hf {
			if c.State == statusdoc.StateHot && (c.Successes > 0 || healthPassed[c.Candidate]) {
				proven++
			}
			continue
		}
		why := "health check failed"
		if f := c.LastFailure; f != nil {
			why = orDash(phaseWords[f.Phase]) + " (" + f.Phase + ")"
			if _, ok := since[c.Candidate]; !ok {
				since[c.Candidate] = f.Time.Local().Format("15:04:05")
			}
		}
		when := since[c.Candidate]
		if when == "" {
			// Only the last health run is known, not when the failing began.
			failing = append(failing, fmt.Sprintf("%s failing: %s (last run %s)", c.Candidate, why, st.Health.LastRun.Local().Format("15:04:05")))
			continue
		}
		failing = append(failing, fmt.Sprintf("%s failing since %s: %s", c.Candidate, when, why))
	}
	parts = append(parts, provenText(proven, len(st.Candidates)-len(failing)-proven, len(st.Candidates)))
	if st.Health.TargetDown {
		parts = append(parts, targetDownText(st.Health.Origin))
	}
	return strings.Join(append(parts, failing...), " · ")
}

// targetDownText says that the health URL failed on every path: the target is
// the problem, not the paths.
func targetDownText(origin string) string {
	return "health check target " + origin + " fails on every path: the target is down or unreachable from here, not the paths; traffic judges them"
}

// provenText counts paths with evidence: one without a success or a passing
// health check is untried, never healthy.
func provenText(proven, untried, total int) string {
	t := fmt.Sprintf("%d of %d paths proven", proven, total)
	if untried > 0 {
		t += fmt.Sprintf(", %d untried", untried)
	}
	return t
}

// Table writes st as aligned text tables: a summary, candidates,
// host-scoped cooldowns, health results, the per-host cache and the last
// nDecisions decisions (newest first), one table after another on the same
// tabwriter.
func Table(w io.Writer, st *statusdoc.Status, nDecisions int) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	summary(tw, st)
	candidates(w, tw, st)
	hostCooldowns(w, tw, st)
	healthResults(w, tw, st.Health.Results)
	cache(w, tw, st.Cache)
	return decisions(w, tw, st.Decisions, nDecisions)
}

// summary writes the listeners, the health check, the TLS probe count and
// the cooldown.
func summary(tw *tabwriter.Writer, st *statusdoc.Status) {
	h := st.Health
	fmt.Fprintf(tw, "listening\t%s\n", orDash(strings.Join(st.Listeners, ", ")))
	switch {
	case !h.Enabled:
		fmt.Fprintf(tw, "health\toff\n")
	default:
		runs := "runs"
		if st.HealthRuns == 1 {
			runs = "run"
		}
		down := ""
		if h.TargetDown {
			down = ", the target fails on every path (no path blamed)"
		}
		fmt.Fprintf(tw, "health\t%s, preferred %s, last run %s, %d %s%s\n", h.Origin, orDash(h.Preferred), since(st.Now, h.LastRun), st.HealthRuns, runs, down)
	}
	fmt.Fprintf(tw, "tls probes\t%d\n", st.TLSProbes)
	if c, ok := settingText(st, settings.CooldownMS); ok {
		fmt.Fprintf(tw, "cooldown\t%s\n", c)
	}
	tw.Flush()
}

// candidates writes the candidates in their default order with their
// state: never "hot" while its health check fails or with no evidence.
func candidates(w io.Writer, tw *tabwriter.Writer, st *statusdoc.Status) {
	healthFailed, healthPassed := map[string]bool{}, map[string]bool{}
	for _, r := range st.Health.Results {
		healthFailed[r.Candidate], healthPassed[r.Candidate] = !r.Alive && !st.Health.TargetDown, r.Alive
	}
	section(w, "CANDIDATES (default order)")
	fmt.Fprintf(tw, "#\tCANDIDATE\tKIND\tSOURCE\tSTATE\tCOOLDOWN LEFT\tOK\tFAILED\tLAST FAILURE\n")
	for i, c := range st.Candidates {
		state := c.State
		if state == statusdoc.StateFailing || state == statusdoc.StateHot && healthFailed[c.Candidate] {
			state = "failing (health)" // never "hot" while its health check fails
		} else if state == statusdoc.StateHot && c.Successes == 0 && !healthPassed[c.Candidate] {
			state = "untried" // no success and no passing health check: as the verdict line counts it
		}
		if c.Preferred {
			state += " (preferred)"
		}
		left := "-"
		if c.State == statusdoc.StateCooling {
			left = msText(c.RemainingMS)
		}
		last := "-"
		if f := c.LastFailure; f != nil {
			last = fmt.Sprintf("%s (%s) %s: %s", f.Phase, f.Tier, since(st.Now, f.Time), clip(f.Reason, 70))
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", i+1, c.Candidate, orDash(c.Kind), c.Source, state, left, c.Successes, c.Failures, last)
	}
	tw.Flush()
}

// hostCooldowns writes the host-scoped cooldowns of every candidate, when
// there are any.
func hostCooldowns(w io.Writer, tw *tabwriter.Writer, st *statusdoc.Status) {
	var hostRows int
	for _, c := range st.Candidates {
		hostRows += len(c.HostCooldowns)
	}
	if hostRows == 0 {
		return
	}
	section(w, "HOST COOLDOWNS")
	fmt.Fprintf(tw, "CANDIDATE\tHOST\tLEFT\tPHASE\tREASON\n")
	for _, c := range st.Candidates {
		for _, hc := range c.HostCooldowns {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Candidate, hc.Host, msText(hc.RemainingMS), hc.Phase, clip(hc.Reason, 70))
		}
	}
	tw.Flush()
}

// healthResults writes the last health run's result per candidate, when
// there is one.
func healthResults(w io.Writer, tw *tabwriter.Writer, results []statusdoc.HealthResultStatus) {
	if len(results) == 0 {
		return
	}
	section(w, "HEALTH CHECK (last run)")
	fmt.Fprintf(tw, "CANDIDATE\tRESULT\tSTREAK\tELIGIBLE\tREASON\n")
	for _, r := range results {
		res := "failed"
		if r.Alive {
			res = "alive"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", r.Candidate, res, r.Streak, yesNo(r.Eligible), orDash(clip(r.Reason, 70)))
	}
	tw.Flush()
}

// cache writes the per-host cache: which candidate serves a host, for how
// much longer.
func cache(w io.Writer, tw *tabwriter.Writer, entries []statusdoc.CacheStatus) {
	section(w, "PER-HOST CACHE")
	if len(entries) == 0 {
		fmt.Fprintln(w, "(empty)")
		return
	}
	fmt.Fprintf(tw, "HOST\tCANDIDATE\tEXPIRES IN\n")
	for _, ce := range entries {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", ce.Host, ce.Candidate, msText(ce.RemainingMS))
	}
	tw.Flush()
}

// decisions writes the last n of ds (oldest first), newest first.
func decisions(w io.Writer, tw *tabwriter.Writer, ds []statusdoc.Decision, n int) error {
	section(w, fmt.Sprintf("RECENT DECISIONS (newest first, %d of %d)", min(n, len(ds)), len(ds)))
	if len(ds) == 0 || n == 0 {
		fmt.Fprintln(w, "(none)")
		return nil
	}
	fmt.Fprintf(tw, "TIME\tKIND\tHOST\tCANDIDATE\tLATENCY\tFAILED FIRST\tERROR\n")
	for i := len(ds) - 1; i >= 0 && i >= len(ds)-n; i-- {
		d := ds[i]
		var failed []string
		for _, f := range d.Failed {
			s := f.Candidate + " " + f.Phase
			if f.Status != 0 {
				s += " " + strconv.Itoa(f.Status)
			}
			failed = append(failed, s)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.1f ms\t%s\t%s\n", d.Time.Local().Format("15:04:05"), d.Kind, d.Host, orDash(d.Candidate), d.LatencyMS,
			orDash(strings.Join(failed, "; ")), orDash(d.Error))
	}
	return tw.Flush()
}

func section(w io.Writer, title string) { fmt.Fprintf(w, "\n%s\n", title) }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// clip shortens s to n bytes on a rune boundary, with "…" when cut, and
// keeps tabs and newlines out of the table.
func clip(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, s)
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// settingText is the setting key of the status document st as the
// tables show it: a millisecond value as msText, 0 or the empty string as
// what it means
// (the key table's Zero: "off"); false when st does not show the key.
func settingText(st *statusdoc.Status, key string) (string, bool) {
	x, ok := st.Settings[key]
	k, known := settings.Lookup(key)
	if !ok || !known {
		return "", false
	}
	text := settings.Text(x)
	if (text == "" || text == "0") && k.Zero != "" {
		return k.Zero, true
	}
	if k.Kind == settings.KindMS {
		if ms, err := strconv.ParseInt(text, 10, 64); err == nil {
			return msText(ms), true
		}
	}
	return text, true
}

// msText renders ms as "850 ms", "29.9 s" or "4 m 10 s".
func msText(ms int64) string {
	switch {
	case ms < 1000:
		return strconv.FormatInt(ms, 10) + " ms"
	case ms < 60_000:
		return strconv.FormatFloat(float64(ms)/1000, 'f', 1, 64) + " s"
	}
	return fmt.Sprintf("%d m %d s", ms/60_000, ms%60_000/1000)
}

// since renders how long before now t was ("12.0 s ago"), or "never".
func since(now, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return msText(max(now.Sub(t).Milliseconds(), 0)) + " ago"
}
