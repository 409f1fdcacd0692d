package testworld

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// Time bounds of an Instance, wide for a busy 2-core CI machine.
const (
	// instanceListenWait is how long StartInstance waits for the listening line.
	instanceListenWait = 60 * time.Second
	// instanceStopWait is how long Stop waits for the exit after the stop signal
	// (the proxy's own shutdown grace is 1.5 s; the rest is a busy CI box)
	// before it kills.
	instanceStopWait = 15 * time.Second
)

// listeningLine is the log line a dual-proxy writes once its listener is
// bound (text log format): msg=listening addr=HOST:PORT.
var listeningLine = regexp.MustCompile(`msg=listening addr=(\S+)`)

// BuildDualProxy builds cmd/dual-proxy with `go build` into a directory
// removed when tb ends and returns the binary's path. Go's build cache makes
// a second build in the same test run a link step; a package whose tests
// start several instances builds once and passes the path to each
// StartInstance. A build error (or a build longer than 5 minutes) fails tb.
func BuildDualProxy(tb testing.TB) string {
	tb.Helper()
	name := "dual-proxy"
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	bin := filepath.Join(tb.TempDir(), name)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/dual-proxy/dual-proxy/cmd/dual-proxy").CombinedOutput()
	if err != nil {
		tb.Fatalf("testworld: go build cmd/dual-proxy: %v\n%s", err, out)
	}
	return bin
}

// Instance is a dual-proxy process started by StartInstance, from its
// listening line to its exit.
type Instance struct {
	// Addr is the "host:port" the process logged as listening.
	Addr string

	tb       testing.TB
	cmd      *exec.Cmd
	readDone chan struct{} // closed when stderr reached EOF

	mu     sync.Mutex
	stderr strings.Builder

	stopOnce sync.Once
	exitCode int
}

// StartInstance runs the dual-proxy binary bin with args and exactly the
// environment env (nil: an empty one; the caller gives the clean,
// proxy-free environment with HOME and the per-user directories under a
// temporary directory) and returns once the process logged its listening
// address (msg=listening addr=, so args keep the text log format on
// stderr). It fails tb when the process exits first or does not log the
// address within 60 s. tb.Cleanup stops the process (Stop) and, when tb
// failed, logs its stderr.
func StartInstance(tb testing.TB, bin string, env []string, args ...string) *Instance {
	tb.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	pipe, err := cmd.StderrPipe()
	if err != nil {
		tb.Fatalf("testworld: dual-proxy stderr: %v", err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("testworld: start dual-proxy: %v", err)
	}
	in := &Instance{tb: tb, cmd: cmd, readDone: make(chan struct{})}
	addrC := make(chan string, 1)
	go in.readStderr(bufio.NewReader(pipe), addrC)
	tb.Cleanup(func() {
		in.Stop()
		if tb.Failed() {
			tb.Logf("dual-proxy stderr:\n%s", in.Stderr())
		}
	})
	select {
	case in.Addr = <-addrC:
		return in
	case <-in.readDone:
		tb.Fatalf("testworld: dual-proxy exited before it logged its listening address")
	case <-time.After(instanceListenWait):
		tb.Fatalf("testworld: dual-proxy did not log its listening address in %v", instanceListenWait)
	}
	return nil
}

// readStderr keeps the process's stderr, line by line of any length, and
// sends the first listening address on addrC (buffered, one).
func (in *Instance) readStderr(r *bufio.Reader, addrC chan<- string) {
	defer close(in.readDone)
	sent := false
	for {
		line, err := r.ReadString('\n')
		in.mu.Lock()
		in.stderr.WriteString(line)
		in.mu.Unlock()
		if m := listeningLine.FindStringSubmatch(line); m != nil && !sent {
			addrC <- m[1]
			sent = true
		}
		if err != nil {
			return
		}
	}
}

// Stderr returns what the process wrote to stderr so far (its log).
func (in *Instance) Stderr() string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.stderr.String()
}

// Signal sends sig to the process (SIGHUP: re-read the configuration).
func (in *Instance) Signal(sig os.Signal) error { return in.cmd.Process.Signal(sig) }

// Stop stops the process as its user would (SIGTERM on Unix; on Windows,
// which has no SIGTERM, os.Process.Kill), waits for its exit and returns
// the exit status. A process still running 15 s after the stop signal is
// killed and fails the test. Stop may be called more than once (tb.Cleanup
// calls it too); later calls return the first one's status.
func (in *Instance) Stop() int {
	in.stopOnce.Do(func() {
		_ = stopInstance(in.cmd.Process)
		select {
		case <-in.readDone:
		case <-time.After(instanceStopWait):
			in.tb.Errorf("testworld: dual-proxy did not exit within %v of the stop signal; killed", instanceStopWait)
			_ = in.cmd.Process.Kill()
			<-in.readDone
		}
		_ = in.cmd.Wait()
		in.exitCode = in.cmd.ProcessState.ExitCode()
	})
	return in.exitCode
}
