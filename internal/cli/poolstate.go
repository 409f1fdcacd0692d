package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/balance"
	poolstatus "github.com/dual-proxy/dual-proxy/pool/status"
)

// poolStateDoc is the part of /pool/status status prints: the pools'
// members and where the state lives (balance.Health).
type poolStateDoc struct {
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

// printPoolState writes one summary line per pool (poolVerdict), the
// pools' members (printPoolMembers) and where the pool of the proxy at
// addr keeps its state when it is shared (SPEC POOL-23), and loudly when
// the shared store is unreachable and the instance runs on local state.
// The store address comes redacted from the pool. A proxy without a pool
// prints nothing.
func printPoolState(ctx context.Context, w io.Writer, addr string) {
	raw, err := fetchDoc(ctx, addr, "/pool/status")
	if err != nil {
		return
	}
	var doc poolStateDoc
	if json.Unmarshal(raw, &doc) != nil {
		return
	}
	now := time.Now()
	printReloadFailure(w, doc.Config, time.Local)
	for _, p := range doc.Pools {
		fmt.Fprintln(w, poolVerdict(p, doc.Recent, now, time.Local))
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
// in), its class, and the pool's counts for it (SPEC POOL-13, OPS-2).
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

// printReloadFailure writes, when the last re-read of the pool
// configuration failed (SIGHUP or the editor's apply), the line saying so
// with its first error (FILE:LINE:COLUMN: PATH: MSG), the others indented
// below it, and that the configuration loaded before still serves (SPEC
// POOL-16): the user who edited the file learns it where they look, not
// only in the log.
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
	fmt.Fprintf(w, "  still serving the configuration loaded at %s; fix the file, then reload again (SIGHUP, or save in the pool page's editor)\n",
		c.LoadedAt.In(loc).Format(time.DateTime))
}
