package cli

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/balance"
	"github.com/dual-proxy/dual-proxy/pool/config"
	poolstatus "github.com/dual-proxy/dual-proxy/pool/status"
	"github.com/dual-proxy/dual-proxy/proxy/path"
	proxystatus "github.com/dual-proxy/dual-proxy/proxy/status"
)

// phaseWords says a failure phase in words (SPEC CD-3), as the status page
// does; the code goes beside it.
var phaseWords = map[string]string{
	string(path.PhaseGatewayConnect):  "cannot connect to the gateway",
	string(path.PhaseGatewayTLS):      "TLS to the https gateway failed",
	string(path.PhaseSOCKSHandshake):  "the SOCKS5 handshake with the gateway failed",
	string(path.PhaseLocal):           "local resource error",
	string(path.PhaseConnectResponse): "the gateway refused the tunnel",
	string(path.PhaseTLSProbe):        "TLS handshake through the path failed",
	string(path.PhaseOriginConnect):   "cannot connect to the destination",
	string(path.PhaseResponseHeader):  "no response head in time",
	string(path.PhaseStream):          "the answer broke off",
}

// verdict is the one line above a proxy's status (as on its page): the path
// serving, how many paths are proven (a success or a passing health check)
// and untried, and what fails since when.
func verdict(st *proxystatus.Status) string {
	healthFailed, healthPassed := map[string]string{}, map[string]bool{}
	for _, r := range st.Health.Results {
		if !r.Alive {
			healthFailed[r.Candidate] = r.Reason
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
		if c.State != proxystatus.StateCooling && !hf {
			if c.Successes > 0 || healthPassed[c.Candidate] {
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
	return strings.Join(append(parts, failing...), " · ")
}

// provenText counts paths with evidence: one without a success or a passing
// health check is untried, never healthy (SPEC OPS-2).
func provenText(proven, untried, total int) string {
	t := fmt.Sprintf("%d of %d paths proven", proven, total)
	if untried > 0 {
		t += fmt.Sprintf(", %d untried", untried)
	}
	return t
}

// notMemberFaults are the call classes that do not make a member failing:
// success, the caller's bad request, state another member holds (POOL-18),
// and the client's cancel.
var notMemberFaults = []string{"", config.ClassBadRequest, config.ClassState, "canceled"}

// poolVerdict is one pool's line above its members, like the verdict on
// the pool page (SPEC POOL-13, OPS-2): the member that answered the last
// call, how many members are up, cooling down and failing, then each
// member that is not up and why. A member is failing when it is not
// cooling but its latest call in recent (oldest first) failed for a
// reason of its own (not the caller's bad request, not a client cancel).
func poolVerdict(p poolstatus.PoolStatus, recent []balance.CallRecord, now time.Time, loc *time.Location) string {
	last := map[string]balance.CallRecord{}
	var served *balance.CallRecord
	for i := range recent {
		c := &recent[i]
		if c.Pool != p.ID || c.Member == "" {
			continue
		}
		last[c.Member] = *c
		if c.Class == "" {
			served = c
		}
	}
	head := "pool " + p.ID + ": no call answered yet"
	if served != nil {
		head = fmt.Sprintf("pool %s: serving via %s (last call %s)", p.ID, served.Member, served.Time.In(loc).Format(time.TimeOnly))
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
