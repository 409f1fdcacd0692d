package cli

import (
	"context"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/pool"
	"github.com/dual-proxy/dual-proxy/pool/balance"
	"github.com/dual-proxy/dual-proxy/pool/config"
	"github.com/dual-proxy/dual-proxy/pool/redisstate"
	poolstatus "github.com/dual-proxy/dual-proxy/pool/status"
)

func TestPoolStateFlag(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	yaml := "channels:\n  a: {api: anthropic, base_url: \"http://127.0.0.1:9\", api_key: sk-x}\npools:\n  work: {members: [a]}\nstate: redis://cfg:cfgpassword1@127.0.0.1:6390/1\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Run("POOL-23/config-state-redacted", func(t *testing.T) {
		out, errOut, status := runCmd(t, DualProxy, nil, "--config", cfg, "--print-config")
		if status != 0 || strings.Contains(out, "cfgpassword1") || !strings.Contains(out, "url: redis://cfg:***@127.0.0.1:6390/1") {
			t.Fatalf("status %d %q\n%s", status, errOut, out)
		}
	})
	t.Run("POOL-23/flag-wins-over-env-and-config", func(t *testing.T) {
		t.Setenv("DUAL_PROXY_POOL_STATE", "redis://:envpassword2@127.0.0.1:6391/0")
		env := []string{"DUAL_PROXY_POOL_STATE=redis://:envpassword2@127.0.0.1:6391/0"}
		out, _, status := runCmd(t, DualProxy, env, "--config", cfg, "--print-config")
		if status != 0 || !strings.Contains(out, "url: redis://:***@127.0.0.1:6391/0") || strings.Contains(out, "envpassword2") {
			t.Fatalf("env: %d\n%s", status, out)
		}
		out, _, status = runCmd(t, DualProxy, env, "--config", cfg, "--pool-state", "memory", "--print-config")
		if status != 0 || !strings.Contains(out, "url: memory") {
			t.Fatalf("flag: %d\n%s", status, out)
		}
	})
	t.Run("POOL-23/bad-flag-names-the-flag-not-the-password", func(t *testing.T) {
		_, errOut, status := runCmd(t, DualProxy, nil, "--config", cfg, "--pool-state", "http://u:flagpassword3@h:1", "--print-config")
		if status != 2 || !strings.Contains(errOut, "--pool-state") || strings.Contains(errOut, "flagpassword3") {
			t.Fatalf("status %d %q", status, errOut)
		}
	})
}

func TestPoolStateInStatus(t *testing.T) {
	t.Run("POOL-23/status-shows-degraded-shared-state", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		dead := ln.Addr().String()
		ln.Close()
		cfg, err := config.ParseConfig([]byte("channels:\n  a: {api: anthropic, base_url: \"http://127.0.0.1:9\", api_key: sk-x}\npools:\n  work: {members: [a]}\n"), nil)
		if err != nil {
			t.Fatal(err)
		}
		st, err := redisstate.New(redisstate.Options{URL: "redis://u:statuspassword4@" + dead + "/0", Prefix: "dp:t:", Instance: "host:1", Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		p := pool.New(cfg, pool.Options{State: st})
		defer p.Close()
		srv := httptest.NewServer(p)
		defer srv.Close()
		var b strings.Builder
		printPoolState(context.Background(), &b, strings.TrimPrefix(srv.URL, "http://"))
		if out := b.String(); !strings.Contains(out, "pool state: DEGRADED since") || !strings.Contains(out, "redis://u:***@"+dead) || strings.Contains(out, "statuspassword4") {
			t.Fatalf("%q", out)
		}
	})
}

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
		if got := poolVerdict(p, recent, now, time.UTC); got != want {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
		if got := poolVerdict(poolstatus.PoolStatus{ID: "idle", Members: []poolstatus.MemberStatus{{ID: "a", State: "ready"}}}, nil, now, time.UTC); got != "pool idle: no call answered yet · 1 of 1 members up, 0 cooling down, 0 failing" {
			t.Fatal(got)
		}
	})
}
