package proxy

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
)

func TestRoutedLineLevel(t *testing.T) {
	// The attributes of a decision line are only built when its
	// level is on; the line itself is unchanged.
	for _, tc := range []struct {
		name  string
		level slog.Level
		want  bool
	}{
		{"OPS-1/success-line-written-at-debug", slog.LevelDebug, true},
		{"OPS-1/success-line-skipped-at-info", slog.LevelInfo, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			origin := testworld.NewOrigin(t)
			var logs testkit.LogBuffer
			log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: tc.level}))
			addr, _ := proxytest.Start(t, New, Config{LoopbackDirect: true, Logger: log})
			if resp, _ := proxytest.Send(t, addr, "GET "+origin.URL+"/ HTTP/1.1\r\nHost: "+origin.Addr+"\r\n\r\n"); resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			got := strings.Contains(logs.String(), "msg=routed host=127.0.0.1 kind=http candidate=direct")
			if got != tc.want {
				t.Fatalf("routed line written %v, want %v:\n%s", got, tc.want, logs.String())
			}
		})
	}
}

func TestRoutedLineFailovers(t *testing.T) {
	t.Run("OPS-1/one-failed-candidate-is-failed-1-failovers-0", func(t *testing.T) {
		// A request whose only candidate failed has failed over to
		// nothing: failovers=1 would mislead.
		dead := testworld.RefusedAddr(t)
		var logs testkit.LogBuffer
		log := slog.New(slog.NewTextHandler(&logs, nil))
		addr, _ := proxytest.Start(t, New, Config{Candidates: proxytest.Gateways(t, false, dead), Logger: log})
		if resp, _ := proxytest.Send(t, addr, "GET http://example.test/ HTTP/1.1\r\nHost: example.test\r\n\r\n"); resp.StatusCode < 500 {
			t.Fatalf("status %d through a dead gateway", resp.StatusCode)
		}
		out := logs.String()
		if !strings.Contains(out, "msg=routed") || !strings.Contains(out, "failed=1 failovers=0") {
			t.Fatalf("routed line of one failed candidate:\n%s", out)
		}
	})
}
