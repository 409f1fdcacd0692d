//go:build linux

package signals

import (
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestHostileLeftovers: leftovers that make ending them harder than the
// LeftoverGroup cases — a setsid daemon that ignores SIGTERM, and one that
// also closed its descriptors — are still ended once the child exits
// (SIG-2), within the kill-after timeout plus a wide margin.
func TestHostileLeftovers(t *testing.T) {
	for _, c := range []struct{ name, script string }{
		{"SIG-2/setsid-orphan-ignoring-sigterm-killed", `setsid sh -c 'trap "" TERM; echo $$ > "$D/pid.tmp"; mv "$D/pid.tmp" "$D/pid"; exec sleep 100' & while [ ! -s "$D/pid" ]; do sleep 0.01; done; exit 0`},
		{"SIG-2/setsid-orphan-ignoring-sigterm-without-fds-killed", `setsid sh -c 'trap "" TERM HUP INT; echo $$ > "$D/pid.tmp"; mv "$D/pid.tmp" "$D/pid"; exec sleep 100 </dev/null >/dev/null 2>&1' & while [ ! -s "$D/pid" ]; do sleep 0.01; done; exit 0`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := launcher(t, []string{"D=" + dir}, "sh", "-c", c.script)
			start := time.Now()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if got := exitCode(t, cmd, 15*time.Second); got != 0 {
				t.Fatalf("status %d, want 0", got)
			}
			if d := time.Since(start); d > 8*time.Second {
				t.Fatalf("launcher took %v", d)
			}
			pid, err := strconv.Atoi(readFile(filepath.Join(dir, "pid")))
			if err != nil {
				t.Fatal(err)
			}
			if state, ok := procState(pid, "sleep"); ok {
				t.Fatalf("daemon %d still exists in state %c", pid, state)
			}
		})
	}
}
