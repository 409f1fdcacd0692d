package statusview

import (
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/balance"
	poolstatus "github.com/dual-proxy/dual-proxy/pool/status"
)

func TestPoolMembersTable(t *testing.T) {
	t.Run("POOL-13/status-shows-cooldown-since-and-retry-in", func(t *testing.T) {
		now := time.Now()
		since, until := now.Add(-40*time.Second), now.Add(20*time.Second)
		pools := []poolstatus.PoolStatus{{ID: "p", Members: []poolstatus.MemberStatus{
			{ID: "a", API: "anthropic", State: "ready", Successes: 3},
			{ID: "b", API: "openai", State: "cooling", CooldownSince: &since, CooldownUntil: &until, CooldownClass: "auth", Failures: 1},
		}}}
		var b strings.Builder
		printPoolMembers(&b, pools, now)
		out := b.String()
		want := "since " + since.Local().Format(time.TimeOnly) + " (for 40 s), retry in 20 s"
		if !strings.Contains(out, "POOL MEMBERS") || !strings.Contains(out, want) || !strings.Contains(out, "auth") {
			t.Fatalf("no %q in\n%s", want, out)
		}
		if strings.Contains(out, "until") {
			t.Fatalf("cooldown as 'until':\n%s", out)
		}
	})
}

func TestPoolVerdict(t *testing.T) {
	t.Run("OPS-2/pool-verdict-counts-up-cooling-failing", func(t *testing.T) {
		now := time.Date(2026, 1, 2, 15, 4, 30, 0, time.UTC)
		at := func(s int) time.Time { return now.Add(time.Duration(s) * time.Second) }
		since, until := at(-40), at(20)
		p := poolstatus.PoolStatus{ID: "work", Members: []poolstatus.MemberStatus{
			{ID: "a", State: "ready"},
			{ID: "b", State: "cooling", CooldownSince: &since, CooldownUntil: &until, CooldownClass: "rate_limit"},
			{ID: "c", State: "ready"},
			{ID: "d", State: "ready"},
		}}
		recent := []balance.CallRecord{
			{Time: at(-30), Pool: "work", Member: "c"},
			{Time: at(-20), Pool: "work", Member: "a"},
			{Time: at(-10), Pool: "work", Member: "c", Class: "server"},
			{Time: at(-9), Pool: "work", Member: "d", Class: "bad_request"},
			{Time: at(-8), Pool: "other", Member: "a", Class: "auth"},
			{Time: at(-7), Pool: "work", Member: "d", Class: "canceled"},
		}
		want := "pool work: serving via a (last call 15:04:10) · 2 of 4 members up, 1 cooling down, 1 failing · " +
			"b cooling down since 15:03:50 (for 40 s), retry in 20 s: rate limited (rate_limit) · c failing: server error (server), last call 15:04:20"
		if got := PoolVerdict(p, recent, now, time.UTC); got != want {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
		if got := PoolVerdict(poolstatus.PoolStatus{ID: "idle", Members: []poolstatus.MemberStatus{{ID: "a", State: "ready"}}}, nil, now, time.UTC); got != "pool idle: no call answered yet · 1 of 1 members up, 0 cooling down, 0 failing" {
			t.Fatal(got)
		}
	})
}
