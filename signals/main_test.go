//go:build linux

package signals

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

// Re-exec test helper: with SIGNALS_TEST_LAUNCHER=1 the test binary is a tiny launcher that runs
// the command after "--" through Run and exits with its status, so tests can send real signals
// to a real launcher process (and run it inside tmux for PTY mode).
//
//	SIGNALS_TEST_KILL_AFTER   Options.KillAfter (Go duration)
//	SIGNALS_TEST_NOPTY        "1" → Options.NoPTY
//	SIGNALS_TEST_PIDFILE      the launcher writes its pid there before Run
//	SIGNALS_TEST_LOG          debug log file
//	SIGNALS_TEST_PANIC_USR1   "1" → panic while forwarding SIGUSR1 (tests the panic path)
//	SIGNALS_TEST_SELECT       "1" → wait for terminal input with select(2), macOS's choice
//	SIGNALS_TEST_KEEP         "1" → Options.KeepHandlers
//	SIGNALS_TEST_LATE_SIGINT  "1" → the launcher sends itself SIGINT after Run returned
//	SIGNALS_TEST_CHURN        a file: while Run runs, end OS threads (goroutines that exit
//	                          locked with runtime.LockOSThread), then create the file
const launcherEnv = "SIGNALS_TEST_LAUNCHER"

func TestMain(m *testing.M) {
	if os.Getenv(launcherEnv) == "1" {
		os.Exit(launcherMain())
	}
	goleak.VerifyTestMain(m)
}

func launcherMain() int {
	args := os.Args[1:]
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: launcher -- CMD [ARGS…]")
		return 2
	}
	opts := Options{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, NoPTY: os.Getenv("SIGNALS_TEST_NOPTY") == "1",
		KeepHandlers: os.Getenv("SIGNALS_TEST_KEEP") == "1"}
	if d, err := time.ParseDuration(os.Getenv("SIGNALS_TEST_KILL_AFTER")); err == nil {
		opts.KillAfter = d
	}
	if p := os.Getenv("SIGNALS_TEST_LOG"); p != "" {
		if f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
			defer f.Close()
			opts.Logger = slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelDebug}))
		}
	}
	if p := os.Getenv("SIGNALS_TEST_PIDFILE"); p != "" {
		_ = os.WriteFile(p+".tmp", []byte(strconv.Itoa(os.Getpid())), 0o644)
		_ = os.Rename(p+".tmp", p)
	}
	if os.Getenv("SIGNALS_TEST_SELECT") == "1" {
		waitInput = selectInput
	}
	if p := os.Getenv("SIGNALS_TEST_CHURN"); p != "" {
		go churnThreads(p)
	}
	kill := killFunc(unix.Kill)
	if os.Getenv("SIGNALS_TEST_PANIC_USR1") == "1" {
		kill = func(pid int, sig unix.Signal) error {
			if sig == unix.SIGUSR1 {
				panic("test panic while forwarding SIGUSR1")
			}
			return unix.Kill(pid, sig)
		}
	}
	status, err := run(context.Background(), exec.Command(args[0], args[1:]...), opts, kill)
	if err != nil {
		fmt.Fprintln(os.Stderr, "launcher:", err)
	}
	if os.Getenv("SIGNALS_TEST_LATE_SIGINT") == "1" {
		// Sent to this thread, so it is handled before tgkill(2) returns: a launcher still
		// running past it caught the signal.
		runtime.LockOSThread()
		_ = unix.Tgkill(os.Getpid(), unix.Gettid(), unix.SIGINT)
		runtime.UnlockOSThread()
	}
	return status
}

// churnThreads makes the Go runtime end OS threads once the child runs, then creates the file
// done. Each round parks 16 goroutines, one after the other, each locked to its thread
// (runtime.LockOSThread): each takes the thread it runs on out of the runtime's idle list, so the
// rounds reach every idle thread, the one that forked the child included when it is idle (an
// unlocked start). Released, they exit still locked, and the runtime ends their threads. A
// parent-death signal tied to a thread that ends kills the child here (SIG-2, Go issue 27505).
func churnThreads(done string) {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		if ids, _ := childPIDs(); len(ids) > 0 {
			break
		}
		time.Sleep(5 * time.Millisecond) // polling with a deadline
	}
	for range 4 {
		release := make(chan struct{})
		var wg sync.WaitGroup
		for range 16 {
			held := make(chan struct{})
			wg.Add(1)
			go func() {
				defer wg.Done()
				runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
				close(held)
				<-release
			}()
			<-held
		}
		close(release)
		wg.Wait()
	}
	_ = os.WriteFile(done, nil, 0o644)
}

// launcher returns a command running the test launcher on args with extra environment.
func launcher(t *testing.T, env []string, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, append([]string{"--"}, args...)...)
	// The race runtime sleeps 1 s at exit by default; timing assertions measure the launcher.
	cmd.Env = append(append(os.Environ(), launcherEnv+"=1", "GORACE=atexit_sleep_ms=0"), env...)
	return cmd
}

// readFile returns the trimmed content of a file, "" when it does not exist.
func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return strings.TrimSpace(string(b))
}

// fileExists reports whether path exists.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// lineCount counts the lines of a file (0 when missing).
func lineCount(path string) int {
	b, _ := os.ReadFile(path)
	return bytes.Count(b, []byte("\n"))
}

// exitCode waits for cmd and returns its exit status, failing the test after d.
func exitCode(t *testing.T, cmd *exec.Cmd, d time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case err := <-done:
		return ExitStatus(err)
	case <-timer.C:
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("launcher did not exit within %v", d)
		return -1
	}
}

// procState returns the state letter of pid ('Z' for a zombie) and whether it exists and is
// still the process named comm (pids are recycled).
func procState(pid int, comm string) (byte, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil || !bytes.Contains(b, []byte("("+comm+")")) {
		return 0, false
	}
	st, ok := parseProcStat(b)
	return st.state, ok
}

// sendSignal sends sig to pid, failing the test on error.
func sendSignal(t *testing.T, pid int, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(pid, sig); err != nil {
		t.Fatalf("kill %d %v: %v", pid, sig, err)
	}
}
