package proxy

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/testworld"
)

func TestRoutedLineLevel(t *testing.T) {
	// issue 20: the attributes of a decision line are only built when its
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
			var logs logBuffer
			log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: tc.level}))
			addr, _ := startProxy(t, Config{LoopbackDirect: true, Logger: log})
			if resp, _ := fwSend(t, addr, "GET "+origin.URL+"/ HTTP/1.1\r\nHost: "+origin.Addr+"\r\n\r\n"); resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			got := strings.Contains(logs.String(), "msg=routed host=127.0.0.1 kind=http candidate=direct")
			if got != tc.want {
				t.Fatalf("routed line written %v, want %v:\n%s", got, tc.want, logs.String())
			}
		})
	}
}
