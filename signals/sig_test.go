//go:build linux

package signals

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
)

// trapScript counts each delivery of sig in $D/count and exits 7 once $D/stop exists.
func trapScript(sig string) string {
	return `trap 'echo x >> "$D/count"' ` + sig + `
echo ready > "$D/ready"
while [ ! -e "$D/stop" ]; do sleep 0.02; done
exit 7`
}

// startLauncher starts the test launcher in plain mode with $D set to a fresh directory.
func startLauncher(t *testing.T, killAfter time.Duration, script string) (*exec.Cmd, string) {
	t.Helper()
	dir := t.TempDir()
	cmd := launcher(t, []string{"D=" + dir, "SIGNALS_TEST_KILL_AFTER=" + killAfter.String(),
		"SIGNALS_TEST_LOG=" + filepath.Join(dir, "log")}, "sh", "-c", script)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	})
	testkit.WaitFor(t, 5*time.Second, "child ready", func() bool { return fileExists(filepath.Join(dir, "ready")) })
	return cmd, dir
}

func TestForwardExactlyOnce(t *testing.T) {
	for _, sig := range []syscall.Signal{unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2} {
		name := unix.SignalName(sig)
		t.Run("SIG-2/forwarded-once/"+name, func(t *testing.T) {
			cmd, dir := startLauncher(t, 30*time.Second, trapScript(name[3:]))
			sendSignal(t, cmd.Process.Pid, sig)
			count := filepath.Join(dir, "count")
			testkit.WaitFor(t, 5*time.Second, "trap ran", func() bool { return lineCount(count) >= 1 })
			// A duplicate forward would arrive right behind the first: watch for a while.
			deadline := time.Now().Add(300 * time.Millisecond)
			for time.Now().Before(deadline) && lineCount(count) == 1 {
				time.Sleep(10 * time.Millisecond)
			}
			if err := os.WriteFile(filepath.Join(dir, "stop"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if got := exitCode(t, cmd, 10*time.Second); got != 7 {
				t.Fatalf("status %d, want 7 (the child's own)\nlog:\n%s", got, readFile(filepath.Join(dir, "log")))
			}
			if n := lineCount(count); n != 1 {
				t.Fatalf("child saw %s %d times, want exactly once", name, n)
			}
		})
	}
}

// TestForwardCountsKills counts kill(2) calls in-process: each received signal is sent to the
// child's group exactly once, and to nothing else.
func TestForwardCountsKills(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	sent := map[string]int{}
	kill := func(pid int, sig unix.Signal) error {
		mu.Lock()
		sent[fmt.Sprintf("%d/%s", pid, unix.SignalName(sig))]++
		mu.Unlock()
		return unix.Kill(pid, sig)
	}
	cmd := exec.Command("sh", "-c", trapScript("USR2"))
	cmd.Env = append(os.Environ(), "D="+dir)
	type result struct {
		status int
		err    error
	}
	done := make(chan result, 1)
	go func() {
		st, err := run(context.Background(), cmd, Options{KillAfter: 30 * time.Second}, kill)
		done <- result{st, err}
	}()
	testkit.WaitFor(t, 5*time.Second, "child ready", func() bool { return fileExists(filepath.Join(dir, "ready")) })
	sendSignal(t, os.Getpid(), unix.SIGUSR2)
	testkit.WaitFor(t, 5*time.Second, "trap ran", func() bool { return lineCount(filepath.Join(dir, "count")) >= 1 })
	if err := os.WriteFile(filepath.Join(dir, "stop"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.status != 7 || r.err != nil {
		t.Fatalf("run = %d, %v; want 7, nil", r.status, r.err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := fmt.Sprintf("-%d/SIGUSR2", cmd.Process.Pid)
	if sent[want] != 1 || len(sent) != 1 {
		t.Fatalf("kill calls %v, want exactly {%s: 1}", sent, want)
	}
}

func TestStopTimeout(t *testing.T) {
	ignoreTerm := `trap '' TERM
echo ready > "$D/ready"
while :; do sleep 0.05; done`
	t.Run("SIG-2/ignored-sigterm-killed-after-kill-after", func(t *testing.T) {
		cmd, _ := startLauncher(t, 300*time.Millisecond, ignoreTerm)
		start := time.Now()
		sendSignal(t, cmd.Process.Pid, unix.SIGTERM)
		got := exitCode(t, cmd, 10*time.Second)
		elapsed := time.Since(start)
		if got != 128+int(unix.SIGKILL) {
			t.Fatalf("status %d, want 137", got)
		}
		if elapsed < 200*time.Millisecond || elapsed > 3*time.Second {
			t.Fatalf("killed after %v, want about 300 ms (200 ms … 3 s)", elapsed)
		}
	})
	t.Run("SIG-2/sighup-starts-stop-timeout", func(t *testing.T) {
		cmd, _ := startLauncher(t, 300*time.Millisecond, `trap '' TERM HUP
echo ready > "$D/ready"
while :; do sleep 0.05; done`)
		start := time.Now()
		sendSignal(t, cmd.Process.Pid, unix.SIGHUP)
		if got := exitCode(t, cmd, 10*time.Second); got != 137 {
			t.Fatalf("status %d, want 137", got)
		}
		if elapsed := time.Since(start); elapsed < 200*time.Millisecond || elapsed > 3*time.Second {
			t.Fatalf("killed after %v, want about 300 ms", elapsed)
		}
	})
	for _, second := range []syscall.Signal{unix.SIGTERM, unix.SIGINT} {
		t.Run("SIG-2/second-"+unix.SignalName(second)+"-kills-at-once", func(t *testing.T) {
			cmd, dir := startLauncher(t, 60*time.Second, `trap 'echo x >> "$D/count"' TERM INT
echo ready > "$D/ready"
while :; do sleep 0.05; done`)
			sendSignal(t, cmd.Process.Pid, unix.SIGTERM)
			testkit.WaitFor(t, 5*time.Second, "first SIGTERM delivered", func() bool { return lineCount(filepath.Join(dir, "count")) >= 1 })
			start := time.Now()
			sendSignal(t, cmd.Process.Pid, second)
			if got := exitCode(t, cmd, 10*time.Second); got != 137 {
				t.Fatalf("status %d, want 137", got)
			}
			if elapsed := time.Since(start); elapsed > 3*time.Second {
				t.Fatalf("second signal took %v to kill, want at once", elapsed)
			}
		})
	}
	t.Run("SIG-2/context-cancel-stops-like-sigterm", func(t *testing.T) {
		dir := t.TempDir()
		cmd := exec.Command("sh", "-c", ignoreTerm)
		cmd.Env = append(os.Environ(), "D="+dir)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan int, 1)
		go func() {
			st, _ := Run(ctx, cmd, Options{KillAfter: 300 * time.Millisecond})
			done <- st
		}()
		testkit.WaitFor(t, 5*time.Second, "child ready", func() bool { return fileExists(filepath.Join(dir, "ready")) })
		start := time.Now()
		cancel()
		select {
		case st := <-done:
			if st != 137 {
				t.Fatalf("status %d, want 137", st)
			}
			if elapsed := time.Since(start); elapsed < 200*time.Millisecond || elapsed > 3*time.Second {
				t.Fatalf("killed after %v, want about 300 ms", elapsed)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return after cancel")
		}
	})
}

func TestLeftoverGroup(t *testing.T) {
	cases := []struct {
		name, script string
		minElapsed   time.Duration
		maxElapsed   time.Duration // wide: CI is a busy 2-core machine
	}{
		{"SIG-2/leftover-grandchild-terminated", `sleep 100 & echo $! > "$D/pid"; exit 0`, 0, 3 * time.Second},
		{"SIG-2/leftover-ignoring-sigterm-killed", `trap '' TERM; sleep 100 & echo $! > "$D/pid"; exit 0`, 900 * time.Millisecond, 6 * time.Second},
		// A daemon that left the group and the session (setsid) is reparented to the launcher
		// (subreaper) when the child exits, and ended too.
		{"SIG-2/setsid-orphan-terminated", `setsid sh -c 'echo $$ > "$D/pid.tmp"; mv "$D/pid.tmp" "$D/pid"; exec sleep 100' & while [ ! -s "$D/pid" ]; do sleep 0.01; done; exit 0`, 0, 4 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := launcher(t, []string{"D=" + dir}, "sh", "-c", c.script)
			start := time.Now()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if got := exitCode(t, cmd, 10*time.Second); got != 0 {
				t.Fatalf("status %d, want 0", got)
			}
			elapsed := time.Since(start)
			if elapsed < c.minElapsed || elapsed > c.maxElapsed {
				t.Fatalf("launcher took %v, want %v … %v", elapsed, c.minElapsed, c.maxElapsed)
			}
			pid, err := strconv.Atoi(readFile(filepath.Join(dir, "pid")))
			if err != nil {
				t.Fatal(err)
			}
			// The launcher already exited: a grandchild it did not reap would be a zombie forever
			// (PID 1 here does not reap), one it did not kill would still be sleeping.
			if state, ok := procState(pid, "sleep"); ok {
				t.Fatalf("grandchild %d still exists in state %c", pid, state)
			}
		})
	}
}

// TestReapsOrphansWhileRunning: grandchildren orphaned while the child still runs are reparented
// to the launcher (subreaper) and reaped as they exit.
func TestReapsOrphansWhileRunning(t *testing.T) {
	t.Run("SIG-2/no-zombie-while-running", func(t *testing.T) {
		cmd, dir := startLauncher(t, 5*time.Second, `(sleep 0.1 & echo $! >> "$D/pids") ; (sleep 0.1 & echo $! >> "$D/pids")
echo ready > "$D/ready"
while [ ! -e "$D/stop" ]; do sleep 0.02; done`)
		launcherPID := cmd.Process.Pid
		testkit.WaitFor(t, 5*time.Second, "orphans reparented and reaped", func() bool {
			if lineCount(filepath.Join(dir, "pids")) < 2 {
				return false
			}
			zombies := listProcs(func(st procStat) bool { return st.ppid == launcherPID && st.state == 'Z' })
			sleepers := listProcs(func(st procStat) bool { return st.ppid == launcherPID && st.state != 'Z' })
			return len(zombies) == 0 && len(sleepers) == 1 // only the child's sh is left
		})
		if err := os.WriteFile(filepath.Join(dir, "stop"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if got := exitCode(t, cmd, 10*time.Second); got != 0 {
			t.Fatalf("status %d, want 0", got)
		}
	})
}
