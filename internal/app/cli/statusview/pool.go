package statusview

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dual-proxy/dual-proxy/pool"
	"github.com/dual-proxy/dual-proxy/pool/balance"
	"github.com/dual-proxy/dual-proxy/pool/config"
	poolstatus "github.com/dual-proxy/dual-proxy/pool/status"
)

// PoolDoc is the part of /pool/status that status prints: the pools'
// members and where the state lives (balance.Health).
type PoolDoc struct {
	Pools  []poolstatus.PoolStatus `json:"pools"`
	Recent []balance.CallRecord    `json:"recent"`
	Config poolstatus.ConfigState  `json:"config"`
	State  struct {
		Kind     string     `json:"kind"`
		Store    string     `json:"store"`
		Instance string     `json:"instance"`
		Degraded bool       `json:"degraded"`
		Since    *time.Time `json:"degraded_since"`
		Reason   string     `json:"reason"`
	} `json:"state"`
}

// PoolState writes one summary line per pool (PoolVerdict) of doc, the pools'
// members and where the pool keeps its state when it is shared, and loudly when
// the shared store is unreachable and the instance runs on local state. The
// store address comes redacted from the pool.
func PoolState(w io.Writer, doc *PoolDoc) {
	now := time.Now()
	printReloadFailure(w, doc.Config, time.Local)
	for _, p := range doc.Pools {
		fmt.Fprintln(w, PoolVerdict(p, doc.Recent, now, time.Local))
	}
	defer printPoolMembers(w, doc.Pools, now)
	if doc.State.Kind == "" || doc.State.Kind == "memory" {
		return
	}
	st := doc.State
	if !st.Degraded {
		fmt.Fprintf(w, "pool state: shared on %s %s (this instance: %s)\n", st.Kind, st.Store, st.Instance)
		return
	}
	since := "?"
	if st.Since != nil {
		since = st.Since.Local().Format(time.RFC3339)
	}
	fmt.Fprintf(w, "pool state: DEGRADED since %s: %s %s unreachable (%s); this instance balances on its local state until it is back\n",
		since, st.Kind, st.Store, st.Reason)
}

// printPoolMembers writes one row per pool member: state, cooldown in the
// page's words (poolstatus.CooldownText: since when, for how long, retry
// in), its class, and the pool's counts for it.
func printPoolMembers(w io.Writer, pools []poolstatus.PoolStatus, now time.Time) {
	if len(pools) == 0 {
		return
	}
	section(w, "POOL MEMBERS")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "POOL\tMEMBER\tAPI\tSTATE\tCOOLDOWN\tCLASS\tOK\tFAILED\tBOUND\n")
	for _, p := range pools {
		for _, m := range p.Members {
			cd := "-"
			if m.CooldownUntil != nil {
				cd = orDash(poolstatus.CooldownText(m.CooldownSince, *m.CooldownUntil, now, time.Local))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", p.ID, m.ID, orDash(m.API), m.State, cd, orDash(m.CooldownClass),
				m.Successes, m.Failures, strconv.Itoa(m.BoundSessions))
		}
	}
	tw.Flush()
}

// printReloadFailure writes, when the last re-read of the pool configuration
// failed (SIGHUP or the editor's apply), the line saying so with its first
// error (FILE:LINE:COLUMN: PATH: MSG), the others indented below it, and that
// the configuration loaded before still serves: the user who edited the file
// learns it where they look, not only in the log.
func printReloadFailure(w io.Writer, c poolstatus.ConfigState, loc *time.Location) {
	if len(c.ReloadErrors) == 0 {
		return
	}
	at := "?"
	if c.ReloadFailedAt != nil {
		at = c.ReloadFailedAt.In(loc).Format(time.DateTime)
	}
	fmt.Fprintf(w, "pool config: NOT RELOADED at %s: %s\n", at, c.ReloadErrors[0])
	for _, e := range c.ReloadErrors[1:] {
		fmt.Fprintf(w, "  %s\n", e)
	}
	fmt.Fprintf(w, "  still serving the configuration loaded at %s; fix the file, then it reloads by itself (file watch), on SIGHUP or from the pool page's editor\n",
		c.LoadedAt.In(loc).Format(time.DateTime))
}

// FileNotReloaded writes that the last reload of the config file at path
// was refused: its first error (FILE:LINE:COL: PATH: MSG, never a value of
// the file), the others indented below, and that the settings loaded
// before still run, for a file whose pool state cannot say it (a file of
// proxy: settings only).
func FileNotReloaded(w io.Writer, path string, errs []string) {
	if len(errs) == 0 {
		return
	}
	fmt.Fprintf(w, "config file: NOT RELOADED: %s\n", errs[0])
	for _, e := range errs[1:] {
		fmt.Fprintf(w, "  %s\n", e)
	}
	fmt.Fprintf(w, "  still running the settings loaded before from %s; fix the file, then it reloads by itself (file watch) or on SIGHUP\n", path)
}

// notMemberFaults are the call classes that do not make a member failing:
// success, the caller's bad request, state another member holds,
// and the client's cancel.
var notMemberFaults = []string{"", config.ClassBadRequest, config.ClassState, "canceled"}

// PoolVerdict is one pool's line above its members, like the verdict on
// the pool page: the member that answered the last
// call, or that the last call failed on every member tried (a record
// without a member, for a reason that is not the caller's), how many
// members are up, cooling down and failing, then each member that is not
// up and why. A member is failing when it is not cooling but its latest
// call in recent (oldest first) failed for a reason of its own (not the
// caller's bad request, not a client cancel).
func PoolVerdict(p poolstatus.PoolStatus, recent []balance.CallRecord, now time.Time, loc *time.Location) string {
	last := map[string]balance.CallRecord{}
	var served, allFailed *balance.CallRecord
	for i := range recent {
		c := &recent[i]
		switch {
		case c.Pool != p.ID:
		case c.Member == "" && !slices.Contains(notMemberFaults, c.Class):
			allFailed = c
		case c.Member == "":
		default:
			last[c.Member] = *c
			if c.Class == "" {
				served, allFailed = c, nil
			}
		}
	}
	head := "pool " + p.ID + ": no call answered yet"
	if served != nil {
		head = fmt.Sprintf("pool %s: serving via %s (last call %s)", p.ID, served.Member, served.Time.In(loc).Format(time.TimeOnly))
	}
	if allFailed != nil {
		head = fmt.Sprintf("pool %s: the last call (%s) failed on every member tried, the last with %s", p.ID, allFailed.Time.In(loc).Format(time.TimeOnly), poolstatus.ClassText(allFailed.Class))
		if served != nil {
			head += fmt.Sprintf("; last answered via %s at %s", served.Member, served.Time.In(loc).Format(time.TimeOnly))
		}
	}
	var cooling, failing int
	var why []string
	for _, m := range p.Members {
		c, called := last[m.ID]
		switch {
		case m.State == "cooling":
			cooling++
			cd := ""
			if m.CooldownUntil != nil {
				cd = " " + poolstatus.CooldownText(m.CooldownSince, *m.CooldownUntil, now, loc)
			}
			why = append(why, fmt.Sprintf("%s cooling down%s: %s", m.ID, cd, poolstatus.ClassText(m.CooldownClass)))
		case called && !slices.Contains(notMemberFaults, c.Class):
			failing++
			why = append(why, fmt.Sprintf("%s failing: %s, last call %s", m.ID, poolstatus.ClassText(c.Class), c.Time.In(loc).Format(time.TimeOnly)))
		}
	}
	counts := fmt.Sprintf("%d of %d members up, %d cooling down, %d failing", len(p.Members)-cooling-failing, len(p.Members), cooling, failing)
	return strings.Join(append([]string{head, counts}, why...), " · ")
}

// PoolTest writes a TestResult as aligned lines: the instance tested
// (addr, HOST:PORT; several may serve a pool), result, member, time to
// first token, total time, attempts, and each failed member.
func PoolTest(w io.Writer, addr string, r *pool.TestResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	result := r.Result
	if r.Class != "" {
		result += " (" + r.Class + ")"
	}
	fmt.Fprintf(tw, "instance\t%s\npool\t%s\nmodel\t%s\nresult\t%s\n", addr, r.Pool, r.Model, result)
	fmt.Fprintf(tw, "member\t%s\n", orDash(r.Member))
	if r.TTFTMs > 0 {
		fmt.Fprintf(tw, "ttft\t%d ms\n", r.TTFTMs)
	} else {
		fmt.Fprintf(tw, "ttft\t-\n")
	}
	fmt.Fprintf(tw, "total\t%d ms\nattempts\t%d\nstatus\t%d\n", r.TotalMs, r.Attempts, r.Status)
	if r.Error != "" {
		fmt.Fprintf(tw, "error\t%s\n", oneLine(r.Error))
	}
	for _, a := range r.Failed {
		line := a.Member + ": " + a.Class
		if a.Status != 0 {
			line += fmt.Sprintf(" %d", a.Status)
		}
		if a.Message != "" {
			line += ": " + oneLine(a.Message) // "dead: network: all candidates failed …", not "network all candidates"
		}
		fmt.Fprintf(tw, "failed\t%s\n", line)
	}
	tw.Flush()
}

// oneLine is s up to its first newline.
func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
