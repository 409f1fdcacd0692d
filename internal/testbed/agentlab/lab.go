// Package agentlab runs real agent CLIs in a loopback-only network
// namespace made for one test: only `lo`, so nothing
// an agent tries can leave the machine, not even DNS. Used by the
// real-agent tests (build tag agents) of cmd/claude-dual-proxy and
// cmd/dual-proxy; it needs root and iproute2.
package agentlab

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Lab is a loopback-only network namespace made for one test run: only
// `lo`, so nothing an agent tries can leave
// the machine, not even DNS. `ip netns exec` bind-mounts
// /etc/netns/NAME/hosts over /etc/hosts, which gives the test names
// (mock.test) that resolve only inside the namespace.
type Lab struct {
	// Name is the namespace name (ip netns exec NAME …).
	Name string
}

// labHosts is the namespace's /etc/hosts.
const labHosts = "127.0.0.1 localhost mock.test\n::1 localhost ip6-localhost\n"

// New creates a namespace with a unique name and its hosts file, and
// deletes both when t ends. It fails t (never skips) when the namespace
// cannot be created: these tests must not run an agent outside one.
func New(t testing.TB) *Lab {
	t.Helper()
	if _, err := exec.LookPath("ip"); err != nil {
		t.Fatal("agents tests need `ip` (iproute2) and root to create a network namespace; .ci/run installs iproute2")
	}
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	l := &Lab{Name: fmt.Sprintf("dpagents-%d-%s", os.Getpid(), hex.EncodeToString(b[:]))}
	if out, err := RunBounded(10*time.Second, "ip", "netns", "add", l.Name); err != nil {
		t.Fatalf("cannot create network namespace %s (the agents tests need root and iproute2; they never run an agent outside a namespace): %v\n%s", l.Name, err, out)
	}
	hostsDir := filepath.Join("/etc/netns", l.Name)
	t.Cleanup(func() {
		if out, err := RunBounded(10*time.Second, "ip", "netns", "del", l.Name); err != nil {
			t.Errorf("ip netns del %s: %v\n%s", l.Name, err, out)
		}
		os.RemoveAll(hostsDir)
	})
	if err := os.MkdirAll(hostsDir, 0o755); err != nil {
		t.Fatalf("namespace hosts dir: %v", err)
	}
	if err := os.WriteFile(filepath.Join(hostsDir, "hosts"), []byte(labHosts), 0o644); err != nil {
		t.Fatalf("namespace hosts file: %v", err)
	}
	if out, err := RunBounded(10*time.Second, "ip", "netns", "exec", l.Name, "ip", "link", "set", "lo", "up"); err != nil {
		t.Fatalf("bring up lo in %s: %v\n%s", l.Name, err, out)
	}
	// The namespace must really be cut off: only lo, and mock.test resolves to loopback.
	out, err := RunBounded(10*time.Second, "ip", "netns", "exec", l.Name, "ip", "-o", "link")
	if err != nil {
		t.Fatalf("ip link in %s: %v\n%s", l.Name, err, out)
	}
	if n := strings.Count(strings.TrimSpace(out), "\n") + 1; n != 1 || !strings.Contains(out, " lo:") {
		t.Fatalf("namespace %s has links other than lo:\n%s", l.Name, out)
	}
	return l
}

// Command returns argv run inside the namespace with exactly env.
func (l *Lab) Command(env []string, argv ...string) *exec.Cmd {
	cmd := exec.Command("ip", append([]string{"netns", "exec", l.Name}, argv...)...)
	cmd.Env = env
	return cmd
}

// Server is a child process (the mock model endpoint, the logging
// gateway: Tools) inside the lab.
type Server struct {
	cmd    *exec.Cmd
	stderr string // file
	done   chan struct{}
}

// StartServer starts argv inside l, waits (up to 20 s) until its stderr
// holds ready, and stops it when t ends.
func (l *Lab) StartServer(t testing.TB, ready string, argv ...string) *Server {
	t.Helper()
	s := &Server{stderr: filepath.Join(t.TempDir(), filepath.Base(argv[len(argv)-1])+".stderr"), done: make(chan struct{})}
	f, err := os.Create(s.stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s.cmd = l.Command([]string{"PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8"}, argv...)
	s.cmd.Stderr, s.cmd.Stdout = f, f
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start %v: %v", argv, err)
	}
	go func() { s.cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		s.cmd.Process.Kill()
		<-s.done
	})
	deadline := time.Now().Add(20 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		b, _ := os.ReadFile(s.stderr)
		if bytes.Contains(b, []byte(ready)) {
			return s
		}
		select {
		case <-s.done:
			t.Fatalf("%v exited before it was ready: %s", argv, b)
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v not ready after 20 s: %s", argv, b)
		}
	}
}

// Result is one finished process.
type Result struct {
	Stdout, Stderr string
	Status         int
	Elapsed        time.Duration
}

// Run runs cmd (stdin /dev/null) and waits at most limit; then the
// process gets SIGTERM (the launcher forwards it to the child's group) and,
// 10 s later, SIGKILL, and t fails.
func Run(t testing.TB, cmd *exec.Cmd, limit time.Duration) Result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %v: %v", cmd.Args, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(limit):
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		t.Fatalf("%v did not finish within %v\nstdout: %s\nstderr: %s", cmd.Args, limit, stdout.String(), stderr.String())
	}
	r := Result{Stdout: stdout.String(), Stderr: stderr.String(), Elapsed: time.Since(start)}
	if ee, ok := err.(*exec.ExitError); ok {
		r.Status = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %v", cmd.Args, err)
	}
	return r
}

// RunBounded runs a short setup command with a time limit and returns its
// combined output.
func RunBounded(limit time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(out), err
}
