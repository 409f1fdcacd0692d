//go:build linux

package signals

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
)

// pane is one tmux server (private socket, tmux -S) whose single pane runs a shell script that records
// `stty -g` of the pane's terminal, runs the test launcher on $D/child.sh, records the launcher's
// status in $D/rc and `stty -g` again. PTY mode is exercised for real: the launcher's stdin is
// the pane's terminal.
type pane struct {
	t    *testing.T
	sock string
	dir  string
}

func startPane(t *testing.T, child string, env ...string) *pane {
	t.Helper()
	return startPaneWith(t, child, "", env...)
}

// startPaneWith is startPane with a shell suffix after the launcher command (a redirection or
// pipe for its stdout).
func startPaneWith(t *testing.T, child, suffix string, env ...string) *pane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is required for the PTY tests (.ci/run installs it)")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := &pane{t: t, dir: t.TempDir()}
	p.sock = filepath.Join(p.dir, "tmux.sock") // private server, removed with the directory
	if err := os.WriteFile(filepath.Join(p.dir, "child.sh"), []byte(child), 0o644); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`D=%q; export D
stty -g > "$D/before"
env %s=1 GORACE=atexit_sleep_ms=0 SIGNALS_TEST_PIDFILE="$D/lpid" SIGNALS_TEST_LOG="$D/log" %s %q -- sh "$D/child.sh" %s
echo "rc=$?" > "$D/rc.tmp"
stty -g > "$D/after"
mv "$D/rc.tmp" "$D/rc"
exec sleep 60
`, p.dir, launcherEnv, strings.Join(env, " "), exe, suffix)
	if err := os.WriteFile(filepath.Join(p.dir, "pane.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", p.sock, "kill-server").Run() })
	p.tmux("-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", "100", "-y", "30", "sh "+filepath.Join(p.dir, "pane.sh"))
	return p
}

// tmux runs a tmux command on the pane's server and returns its output.
func (p *pane) tmux(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", p.sock}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %v: %v: %s", args, err, out)
	}
	return string(out)
}

func (p *pane) file(name string) string { return filepath.Join(p.dir, name) }

// waitFile waits until $D/name exists.
func (p *pane) waitFile(name string) {
	p.t.Helper()
	testkit.WaitFor(p.t, 10*time.Second, name, func() bool { return fileExists(p.file(name)) })
}

// launcherPID returns the pid of the launcher running in the pane.
func (p *pane) launcherPID() int {
	p.t.Helper()
	p.waitFile("lpid")
	pid, err := strconv.Atoi(readFile(p.file("lpid")))
	if err != nil {
		p.t.Fatal(err)
	}
	return pid
}

// status waits for the launcher to exit and returns its status; it also checks that the pane's
// terminal settings are back to what they were before (SPEC SIG-1).
func (p *pane) status() int {
	p.t.Helper()
	p.waitFile("rc")
	rc, err := strconv.Atoi(strings.TrimPrefix(readFile(p.file("rc")), "rc="))
	if err != nil {
		p.t.Fatalf("rc file: %v", err)
	}
	before, after := readFile(p.file("before")), readFile(p.file("after"))
	if before == "" || before != after {
		p.t.Errorf("stty -g differs:\nbefore %s\nafter  %s\nlog:\n%s", before, after, readFile(p.file("log")))
	}
	return rc
}

// ttyState returns `stty -g` of the pane's terminal, read from outside.
func (p *pane) ttyState() string {
	p.t.Helper()
	tty := strings.TrimSpace(p.tmux("display-message", "-p", "-t", "t", "#{pane_tty}"))
	out, err := exec.Command("stty", "-F", tty, "-g").Output()
	if err != nil {
		p.t.Fatalf("stty -F %s: %v", tty, err)
	}
	return strings.TrimSpace(string(out))
}

func TestPTY(t *testing.T) {
	t.Run("SIG-1/output-size-and-exit-0", func(t *testing.T) {
		p := startPane(t, `stty size > "$D/size"; echo hi-from-child`)
		if rc := p.status(); rc != 0 {
			t.Fatalf("rc %d, want 0", rc)
		}
		if got := readFile(p.file("size")); got != "30 100" {
			t.Fatalf("child saw size %q, want \"30 100\"", got)
		}
		if out := p.tmux("capture-pane", "-p", "-t", "t"); !strings.Contains(out, "hi-from-child") {
			t.Fatalf("output did not reach the terminal:\n%s", out)
		}
	})

	t.Run("SIG-1/output-drained-after-exit", func(t *testing.T) {
		// More output than a PTY buffers, written right before exit: all of it must arrive.
		p := startPane(t, `i=0; while [ $i -lt 3000 ]; do echo "line $i"; i=$((i+1)); done; echo LAST-LINE-MARK`)
		if rc := p.status(); rc != 0 {
			t.Fatalf("rc %d, want 0", rc)
		}
		if out := p.tmux("capture-pane", "-p", "-t", "t"); !strings.Contains(out, "LAST-LINE-MARK") {
			t.Fatalf("last output line missing:\n%s", out)
		}
	})

	t.Run("SIG-1/output-drained-to-slow-stdout", func(t *testing.T) {
		// The launcher's stdout is a pipe read late and slowly, so when the child exits its last
		// output is still in the PTY: it must be drained before Run returns.
		p := startPaneWith(t, `i=0; while [ $i -lt 20000 ]; do echo "line $i"; i=$((i+1)); done; echo LAST-LINE-MARK`,
			`| { sleep 0.3; while IFS= read -r l; do printf '%s\n' "$l"; done > "$D/out"; }`)
		if rc := p.status(); rc != 0 {
			t.Fatalf("rc %d, want 0", rc)
		}
		out := readFile(p.file("out"))
		if !strings.HasSuffix(out, "LAST-LINE-MARK") || strings.Count(out, "\n") != 20000 {
			t.Fatalf("output lost: %d lines, ends %q", strings.Count(out, "\n"), out[max(0, len(out)-40):])
		}
	})

	t.Run("SIG-1/sigwinch-resizes-pty", func(t *testing.T) {
		p := startPane(t, `trap 'stty size > "$D/size2"' WINCH
echo ready > "$D/ready"
while [ ! -e "$D/stop" ]; do sleep 0.02; done`)
		p.waitFile("ready")
		p.tmux("resize-window", "-t", "t", "-x", "120", "-y", "40")
		testkit.WaitFor(t, 10*time.Second, "new size seen by child", func() bool { return readFile(p.file("size2")) == "40 120" })
		if err := os.WriteFile(p.file("stop"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if rc := p.status(); rc != 0 {
			t.Fatalf("rc %d, want 0", rc)
		}
	})

	t.Run("SIG-1/restore-after-child-sigkill-with-modes", func(t *testing.T) {
		p := startPane(t, `stty raw -echo
printf '\033[?1049h\033[?1000h\033[?1006h\033[?2004h\033[?25l'
echo $$ > "$D/cpid.tmp"; mv "$D/cpid.tmp" "$D/cpid"
while :; do sleep 0.05; done`)
		p.waitFile("cpid")
		flags := func() string {
			return strings.TrimSpace(p.tmux("display-message", "-p", "-t", "t",
				"#{alternate_on} #{mouse_any_flag} #{cursor_flag}"))
		}
		testkit.WaitFor(t, 10*time.Second, "child modes on", func() bool { return flags() == "1 1 0" })
		cpid, _ := strconv.Atoi(readFile(p.file("cpid")))
		sendSignal(t, cpid, unix.SIGKILL)
		if rc := p.status(); rc != 137 {
			t.Fatalf("rc %d, want 137", rc)
		}
		if got := flags(); got != "0 0 1" {
			t.Fatalf("alternate_on mouse_any_flag cursor_flag = %q after child death, want \"0 0 1\"", got)
		}
	})

	t.Run("SIG-1/restore-after-launcher-sigterm", func(t *testing.T) {
		p := startPane(t, `echo ready > "$D/ready"; while :; do sleep 0.05; done`)
		p.waitFile("ready")
		sendSignal(t, p.launcherPID(), unix.SIGTERM)
		if rc := p.status(); rc != 143 {
			t.Fatalf("rc %d, want 143", rc)
		}
	})

	t.Run("SIG-1/typed-ctrl-c-reaches-child", func(t *testing.T) {
		p := startPane(t, `trap 'exit 3' INT
echo ready > "$D/ready"
while :; do sleep 0.05; done`)
		p.waitFile("ready")
		p.tmux("send-keys", "-t", "t", "C-c")
		if rc := p.status(); rc != 3 {
			t.Fatalf("rc %d, want 3 (child's SIGINT trap)", rc)
		}
	})

	t.Run("SIG-1/restore-after-launcher-panic", func(t *testing.T) {
		p := startPane(t, `echo ready > "$D/ready"; while :; do sleep 0.05; done`, "SIGNALS_TEST_PANIC_USR1=1")
		p.waitFile("ready")
		sendSignal(t, p.launcherPID(), unix.SIGUSR1)
		if rc := p.status(); rc != 2 {
			t.Fatalf("rc %d, want 2 (Go panic)", rc)
		}
	})

	t.Run("SIG-1/nopty-on-terminal-child-reads-and-gets-ctrl-c", func(t *testing.T) {
		p := startPane(t, `trap 'echo int >> "$D/int"; exit 3' INT
echo ready > "$D/ready"
IFS= read -r line; echo "got:$line" > "$D/got"
while :; do sleep 0.05; done`, "SIGNALS_TEST_NOPTY=1")
		p.waitFile("ready")
		p.tmux("send-keys", "-t", "t", "-l", "typed-text")
		p.tmux("send-keys", "-t", "t", "Enter")
		testkit.WaitFor(t, 10*time.Second, "child read the terminal", func() bool { return readFile(p.file("got")) == "got:typed-text" })
		p.tmux("send-keys", "-t", "t", "C-c")
		if rc := p.status(); rc != 3 {
			t.Fatalf("rc %d, want 3 (child's SIGINT trap)", rc)
		}
		if n := lineCount(p.file("int")); n != 1 {
			t.Fatalf("child saw SIGINT %d times, want 1", n)
		}
		// The pane's shell owns the terminal again (tcsetpgrp restored).
		pid, _ := strconv.Atoi(strings.TrimSpace(p.tmux("display-message", "-p", "-t", "t", "#{pane_pid}")))
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if pgrp, tpgid := f[2], f[5]; pgrp != tpgid {
			t.Fatalf("terminal foreground group %s, want the pane shell's %s", tpgid, pgrp)
		}
	})

	t.Run("SIG-1/sigtstp-restores-and-sigcont-reraws", func(t *testing.T) {
		p := startPane(t, `echo ready > "$D/ready"
while [ ! -e "$D/stop" ]; do sleep 0.02; done`)
		p.waitFile("ready")
		before := readFile(p.file("before"))
		testkit.WaitFor(t, 10*time.Second, "raw mode", func() bool { return p.ttyState() != before })
		lpid := p.launcherPID()
		sendSignal(t, lpid, unix.SIGTSTP)
		testkit.WaitFor(t, 10*time.Second, "launcher stopped with terminal restored", func() bool {
			st, ok := procState(lpid, filepath.Base(os.Args[0])[:min(15, len(filepath.Base(os.Args[0])))])
			return ok && st == 'T' && p.ttyState() == before
		})
		sendSignal(t, lpid, unix.SIGCONT)
		testkit.WaitFor(t, 10*time.Second, "raw mode again", func() bool { return p.ttyState() != before })
		if err := os.WriteFile(p.file("stop"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if rc := p.status(); rc != 0 {
			t.Fatalf("rc %d, want 0", rc)
		}
	})
}

// TestPTYBackground: a launcher started in the background of a job-control
// shell (`cmd &`) must not take the terminal (the kernel would stop it with
// SIGTTOU); it runs the child in plain mode and finishes.
func TestPTYBackground(t *testing.T) {
	t.Run("SIG-1/background-launcher-uses-plain-mode", func(t *testing.T) {
		if _, err := exec.LookPath("tmux"); err != nil {
			t.Fatal("tmux is required for the PTY tests (.ci/run installs it)")
		}
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		sock := filepath.Join(dir, "tmux.sock")
		script := fmt.Sprintf(`set -m
D=%q
env %s=1 GORACE=atexit_sleep_ms=0 %q -- sh -c 'echo bg-child-ran > "$0/out"' "$D" </dev/tty &
wait $!
echo "rc=$?" > "$D/rc.tmp"; mv "$D/rc.tmp" "$D/rc"
exec sleep 60
`, dir, launcherEnv, exe)
		os.WriteFile(filepath.Join(dir, "pane.sh"), []byte(script), 0o644)
		t.Cleanup(func() { _ = exec.Command("tmux", "-S", sock, "kill-server").Run() })
		if out, err := exec.Command("tmux", "-S", sock, "-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", "100", "-y", "30", "sh "+filepath.Join(dir, "pane.sh")).CombinedOutput(); err != nil {
			t.Fatalf("tmux: %v %s", err, out)
		}
		testkit.WaitFor(t, 10*time.Second, "rc", func() bool { return fileExists(filepath.Join(dir, "rc")) })
		if rc := readFile(filepath.Join(dir, "rc")); rc != "rc=0" {
			t.Fatalf("launcher in background: %s (148/150 = stopped by SIGTTIN/SIGTTOU)", rc)
		}
		if got := readFile(filepath.Join(dir, "out")); got != "bg-child-ran" {
			t.Fatalf("child output %q", got)
		}
	})
}
