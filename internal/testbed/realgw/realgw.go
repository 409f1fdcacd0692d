//go:build unix

package realgw

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Proc is one running gateway program.
type Proc struct {
	// Name is the program ("microsocks", "danted", "stunnel4").
	Name string
	// Addr is its loopback listener, "127.0.0.1:PORT".
	Addr string
	// Dir is its temp dir (config, log).
	Dir string
	// LogFile collects the program's output (and its own log, where the
	// config sends it there).
	LogFile string

	cmd    *exec.Cmd
	exited chan struct{}
}

// Log returns the program's log so far.
func (p *Proc) Log() string {
	b, _ := os.ReadFile(p.LogFile)
	return string(b)
}

// Kill SIGKILLs the program's process group and waits for it; calling it
// again is harmless.
func (p *Proc) Kill(t testing.TB) {
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		t.Errorf("realgw: %s did not exit after SIGKILL", p.Name)
	}
}

// Binary returns the path of program name in PATH, /usr/sbin or /usr/bin,
// or fails t with how to install package pkg.
func Binary(t testing.TB, name, pkg string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, d := range []string{"/usr/sbin", "/usr/bin"} {
		if _, err := os.Stat(filepath.Join(d, name)); err == nil {
			return filepath.Join(d, name)
		}
	}
	t.Fatalf("realgw: %s not installed (apt-get install -y --no-install-recommends %s)", name, pkg)
	return ""
}

// start runs bin with the arguments args(dir, port) on a free port, up to
// three tries (another process may take the port in between), until ready
// reports the listener serves.
func start(t testing.TB, name, bin string, args func(dir string, port int) []string, ready func(addr string) bool) *Proc {
	t.Helper()
	for try := 1; try <= 3; try++ {
		dir, err := os.MkdirTemp("", "dp-realgw-"+name+"-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		port := freePort(t)
		p := &Proc{Name: name, Addr: fmt.Sprintf("127.0.0.1:%d", port), Dir: dir, LogFile: filepath.Join(dir, "out.log"), exited: make(chan struct{})}
		logf, err := os.OpenFile(p.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		p.cmd = exec.Command(bin, args(dir, port)...)
		p.cmd.Dir, p.cmd.Stdout, p.cmd.Stderr = dir, logf, logf
		p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		err = p.cmd.Start()
		logf.Close()
		if err != nil {
			t.Fatalf("realgw: start %s: %v", name, err)
		}
		go func() { p.cmd.Wait(); close(p.exited) }()
		t.Cleanup(func() { p.Kill(t) })
		if waitReady(p, ready, 10*time.Second) {
			return p
		}
		p.Kill(t)
		t.Logf("realgw: %s on port %d not ready (try %d): %s", name, port, try, p.Log())
	}
	t.Fatalf("realgw: %s never became ready", name)
	return nil
}

// waitReady polls ready until it holds, the program exits, or d passes.
func waitReady(p *Proc, ready func(string) bool, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		select {
		case <-p.exited:
			return false
		default:
		}
		if ready(p.Addr) {
			return true
		}
		time.Sleep(20 * time.Millisecond) // polling a process we do not control
	}
	return false
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// write writes s to dir/name and returns the path.
func write(t testing.TB, dir, name, s string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
