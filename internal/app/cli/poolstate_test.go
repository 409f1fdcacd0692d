package cli

import (
	"context"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool"
	"github.com/dual-proxy/dual-proxy/pool/config"
	"github.com/dual-proxy/dual-proxy/pool/redisstate"
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
