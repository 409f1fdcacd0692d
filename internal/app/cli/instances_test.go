package cli

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/app/registry"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
	"github.com/dual-proxy/dual-proxy/proxy/statusdoc"
)

// startLauncher runs `dual-proxy run` as its own process (the test binary
// standing in, see TestMain) with a child that waits until the returned stop
// function is called; env is the whole environment. stop returns the
// launcher's stderr and exit status once it has exited.
func startLauncher(t *testing.T, env []string, args ...string) (stop func() (string, int)) {
	t.Helper()
	dir := t.TempDir()
	stopFile := filepath.Join(dir, "stop")
	child := append([]string{"--"}, testworld.Child(t, "wait-file", stopFile)...)
	cmd := exec.Command(child[1], append(append([]string{"run", "--listen-port", "0", "--health-url", ""}, args...), child...)...)
	cmd.Env = append([]string{"DUAL_PROXY_TEST_MAIN=dual-proxy"}, env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	stopped := false
	stop = func() (string, int) {
		if !stopped {
			stopped = true
			os.WriteFile(stopFile, nil, 0o600)
		}
		select {
		case <-done:
			return stderr.String(), cmd.ProcessState.ExitCode()
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Fatal("launcher did not exit")
			return "", -1
		}
	}
	t.Cleanup(func() { stop() })
	return stop
}

// pollStatus runs `dual-proxy status` until its output contains want, or
// fails after 10 s.
func pollStatus(t *testing.T, env []string, want string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, errOut, _ := runCmdEnv(t, DualProxy, env, "status", "--decisions", "0")
		if strings.Contains(out, want) {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("status never showed %q:\n%s\n%s", want, out, errOut)
		}
		time.Sleep(50 * time.Millisecond) // polling an external view, not synchronisation
	}
}

// statusJSON is the part of a `status --json` document these tests read.
type statusJSON struct {
	Instance struct {
		Program  string   `json:"program"`
		PID      int      `json:"pid"`
		Addr     string   `json:"addr"`
		Command  string   `json:"command"`
		Pool     string   `json:"pool"`
		Pools    []string `json:"pools"`
		PoolPage string   `json:"pool_page"`
		LogFile  string   `json:"log_file"`
		Started  string   `json:"started"`
	} `json:"instance"`
	Candidates []json.RawMessage `json:"candidates"`
}

func TestStatusFindsLaunchers(t *testing.T) {
	runtimeDir := t.TempDir()
	logFile := filepath.Join(t.TempDir(), "launcher.log")
	// The registry directory's base: XDG_RUNTIME_DIR on Linux, %LocalAppData% on Windows.
	env := []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH"), "XDG_RUNTIME_DIR=" + runtimeDir, "LOCALAPPDATA=" + runtimeDir}
	self := testworld.Child(t, "exit", "0")[0]
	t.Run("OPS-6/status-without-addr-lists-a-running-launcher", func(t *testing.T) {
		stop := startLauncher(t, env, "--log-file", logFile)
		out := pollStatus(t, env, "== dual-proxy run on 127.0.0.1:")
		for _, want := range []string{"running " + self, "log " + logFile, "CANDIDATES"} {
			if !strings.Contains(out, want) {
				t.Fatalf("no %q in\n%s", want, out)
			}
		}
		// OPS-2/status-json-names-each-instance: what the line above each
		// status names in text (pid, the child, the log) is in the JSON
		// too, without --addr and with it.
		m := regexp.MustCompile(`== dual-proxy run on (127\.0\.0\.1:\d+), pid (\d+)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no launcher line:\n%s", out)
		}
		jsonOut, errOut, st := runCmdEnv(t, DualProxy, env, "status", "--json", "--decisions", "0")
		var all []statusJSON
		if st != 0 || json.Unmarshal([]byte(jsonOut), &all) != nil {
			t.Fatalf("status --json: %d %q\n%s", st, errOut, jsonOut)
		}
		jsonOne, errOut, st := runCmdEnv(t, DualProxy, env, "status", "--json", "--addr", m[1])
		var one statusJSON
		if st != 0 || json.Unmarshal([]byte(jsonOne), &one) != nil || len(one.Candidates) == 0 {
			t.Fatalf("status --json --addr: %d %q\n%s", st, errOut, jsonOne)
		}
		for _, doc := range append(all, one) {
			in := doc.Instance
			if in.Addr != m[1] {
				continue
			}
			if in.Program != "dual-proxy run" || strconv.Itoa(in.PID) != m[2] || in.Command != self || in.LogFile != logFile || in.Started == "" {
				t.Fatalf("instance %+v: want program, pid %s, command %s, log %s, started", in, m[2], self, logFile)
			}
			m[1] = "checked"
		}
		if m[1] != "checked" {
			t.Fatalf("no document names the launcher:\n%s", jsonOut)
		}
		if errOut, st := stop(); st != 0 {
			t.Fatalf("launcher status %d %q", st, errOut)
		}
		if es, _ := os.ReadDir(registryDir(env)); len(es) != 0 {
			t.Fatalf("registry not emptied on exit: %v", es)
		}
		// OPS-2/status-with-nothing-running-says-how-to-start: one line,
		// exit 1, naming where it looked and the commands that start one.
		out, errOut, status := runCmdEnv(t, DualProxy, env, "status")
		if status != 1 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "no running dual-proxy found") || !strings.Contains(errOut, runtimeDir) ||
			!strings.Contains(errOut, "start the proxy with dual-proxy, or a command behind one with dual-proxy run -- CMD (claude-dual-proxy for Claude Code)") {
			t.Fatalf("after exit: status %d %q", status, errOut)
		}
	})
	t.Run("OPS-2/status-json-with-nothing-running-prints-an-empty-list", func(t *testing.T) {
		out, errOut, status := runCmdEnv(t, DualProxy, env, "status", "--json")
		if status != 1 || out != "[]\n" || !strings.Contains(errOut, "no running dual-proxy found") {
			t.Fatalf("status --json with nothing running: status %d, stdout %q, stderr %q", status, out, errOut)
		}
	})
	t.Run("OPS-6/pool-test-finds-the-launcher-and-its-token", func(t *testing.T) {
		addr := strings.TrimPrefix(anthropicUpstream(t), "http://")
		cfg := filepath.Join(t.TempDir(), "c.yaml")
		yaml := fmt.Sprintf("channels:\n  up: {api: anthropic, base_url: \"http://%s\", api_key_env: UP_KEY}\npools:\n  lp: {members: [up]}\n", addr)
		if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		penv := append(env, "UP_KEY=sk-up")
		startLauncher(t, penv, "--config", cfg, "--pool", "lp")
		out := pollStatus(t, penv, "pool lp")
		// OPS-6/status-json-names-the-pools-served: the pools and the
		// page's link, never the token.
		jsonOut, _, _ := runCmdEnv(t, DualProxy, penv, "status", "--json", "--decisions", "0")
		var all []statusJSON
		if err := json.Unmarshal([]byte(jsonOut), &all); err != nil || strings.Contains(jsonOut, "dpx-") {
			t.Fatalf("status --json (%v):\n%s", err, jsonOut)
		}
		served := false
		for _, d := range all {
			in := d.Instance
			if slices.Equal(in.Pools, []string{"lp"}) && in.Pool == "lp" && in.PoolPage == "http://"+in.Addr+"/pool/" {
				served = true
			}
		}
		if !served {
			t.Fatalf("no instance with pools [lp] and its page in:\n%s", jsonOut)
		}
		// OPS-6/status-link-hides-the-token-unless-asked: status output is
		// pasted into chats; the link carries the token only with --show-token.
		if !strings.Contains(out, "/pool/ (tests and saving need its token: dual-proxy status --show-token") || strings.Contains(out, "dpx-") {
			t.Fatalf("pool page link without --show-token:\n%s", out)
		}
		out, _, _ = runCmdEnv(t, DualProxy, penv, "status", "--decisions", "0", "--show-token")
		if !strings.Contains(out, "/pool/#token=dpx-") {
			t.Fatalf("no pool page link with the token under --show-token:\n%s", out)
		}
		m := regexp.MustCompile(`== dual-proxy run on (127\.0\.0\.1:\d+)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no launcher line:\n%s", out)
		}
		for _, args := range [][]string{{"--addr", m[1]}, {"--addr", m[1], "--show-token"}} {
			out, _, _ = runCmdEnv(t, DualProxy, penv, append([]string{"status", "--decisions", "0"}, args...)...)
			if hasTok := strings.Contains(out, "/pool/#token=dpx-"); hasTok != (len(args) == 3) || !strings.Contains(out, "pool page: http://"+m[1]+"/pool/") {
				t.Fatalf("status %v:\n%s", args, out)
			}
		}
		out, errOut, status := runCmdEnv(t, DualProxy, penv, "pool", "test", "lp", "m")
		if status != 0 || !strings.Contains(out, "result    ok") || !strings.Contains(out, "member    up") {
			t.Fatalf("pool test: status %d out %q err %q", status, out, errOut)
		}
		// OPS-2/status-has-a-pool-verdict-line: plain status (the launcher
		// found in the registry) and status --addr both sum the pool up.
		verdictRE := regexp.MustCompile(`(?m)^pool lp: serving via up \(last call \d\d:\d\d:\d\d\) · 1 of 1 members up, 0 cooling down, 0 failing$`)
		for _, args := range [][]string{{"status", "--decisions", "0"}, {"status", "--decisions", "0", "--addr", m[1]}} {
			if o, _, _ := runCmdEnv(t, DualProxy, penv, args...); !verdictRE.MatchString(o) {
				t.Fatalf("%v: no pool verdict line:\n%s", args, o)
			}
		}
		// A pool no instance serves: the error says so and names the pools
		// that are served, not just "cannot reach 127.0.0.1:7898", nor that
		// too; exit 2, a pool that does not exist (POOL-14).
		_, errOut, status = runCmdEnv(t, DualProxy, penv, "pool", "test", "nosuch", "m")
		if status != 2 || !strings.Contains(errOut, `no running instance serves pool "nosuch" (running: lp on 127.0.0.1:`) || strings.Contains(errOut, "cannot reach") {
			t.Fatalf("pool test of an unserved pool: status %d err %q", status, errOut)
		}
		if !strings.Contains(out, "instance  "+m[1]+"\n") {
			t.Fatalf("pool test output does not name the instance it tested (%s):\n%s", m[1], out)
		}
		// OPS-6/pool-test-says-which-of-several-instances: a second
		// launcher serving the same pool; the test names the one it used
		// and how to pick the other instead of choosing silently.
		startLauncher(t, penv, "--config", cfg, "--pool", "lp")
		deadline := time.Now().Add(10 * time.Second)
		for {
			o, _, _ := runCmdEnv(t, DualProxy, penv, "status", "--decisions", "0")
			if strings.Count(o, "== dual-proxy run on") >= 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("second launcher never listed:\n%s", o)
			}
			time.Sleep(50 * time.Millisecond) // polling an external view
		}
		out, errOut, status = runCmdEnv(t, DualProxy, penv, "pool", "test", "lp", "m")
		if status != 0 || !strings.Contains(errOut, `2 running instances serve pool "lp" (127.0.0.1:`) || !strings.Contains(errOut, "--addr picks another") {
			t.Fatalf("pool test with two instances: status %d err %q", status, errOut)
		}
		tested := regexp.MustCompile(`testing (127\.0\.0\.1:\d+)`).FindStringSubmatch(errOut)
		if tested == nil || !strings.Contains(out, "instance  "+tested[1]+"\n") {
			t.Fatalf("the note and the output disagree on the instance:\n%s\n%s", errOut, out)
		}
	})
}

// anthropicUpstream is a loopback Anthropic-style channel answering one
// short stream.
func anthropicUpstream(t *testing.T) string {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range []string{
			`event: message_start` + "\n" + `data: {"type":"message_start","message":{"id":"m","content":[],"usage":{"input_tokens":3}}}`,
			`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}}`,
			`event: message_stop` + "\n" + `data: {"type":"message_stop"}`,
		} {
			fmt.Fprint(w, ev+"\n\n")
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(up.Close)
	return up.URL
}

func TestFailedRequestsHint(t *testing.T) {
	t.Run("OPS-6/see-the-log-names-the-file", func(t *testing.T) {
		ds := []statusdoc.Decision{{Host: "a", Candidate: "direct"}, {Host: "b", Error: "all candidates failed"}}
		if got, want := failedRequestsHint("claude-dual-proxy", ds, "/s/launcher.log"), "claude-dual-proxy: 1 request(s) failed on every path through the proxy, to b; see the log: /s/launcher.log"; got != want {
			t.Fatalf("got %q", got)
		}
		if got := failedRequestsHint("x", ds[:1], "/l"); got != "" {
			t.Fatalf("hint without failures: %q", got)
		}
	})
	// After a model call answered 400, the agent's background requests that
	// failed offline are named by host, not counted as if they explained
	// it; a request the client gave up, the shutdown cut or the pool made
	// for a member is no path failure of the agent's.
	t.Run("OPS-1/last-line-names-the-hosts-that-failed", func(t *testing.T) {
		fail := statusdoc.Decision{Error: "all candidates failed"}
		var ds []statusdoc.Decision
		for _, h := range []string{"statsig.anthropic.com", "sentry.io", "statsig.anthropic.com", "a.example", "b.example", "statsig.anthropic.com", "sentry.io"} {
			d := fail
			d.Host = h
			ds = append(ds, d)
		}
		ds = append(ds, statusdoc.Decision{Host: "api.anthropic.com", Candidate: "direct"},
			statusdoc.Decision{Host: "api.anthropic.com", Error: "client gone"},
			statusdoc.Decision{Host: "x.example", Error: "shutting down"},
			statusdoc.Decision{Host: "127.0.0.1", Error: "all candidates failed", Caller: "pool"})
		want := "claude-dual-proxy: 7 request(s) failed on every path through the proxy, to statsig.anthropic.com (3), sentry.io (2), a.example, and 1 more host(s); see the log: /l"
		if got := failedRequestsHint("claude-dual-proxy", ds, "/l"); got != want {
			t.Fatalf("got  %q\nwant %q", got, want)
		}
		if got := failedRequestsHint("x", ds[7:], "/l"); got != "" {
			t.Fatalf("no path failure of the agent's, yet: %q", got)
		}
	})
}

func TestHelpShowsLogPath(t *testing.T) {
	t.Run("OPS-1/help-shows-the-launcher-log-file", func(t *testing.T) {
		home := t.TempDir()
		st := filepath.Join(home, "st")
		// The log's base: XDG_STATE_HOME on Linux, %LocalAppData% on Windows (paths_test.go).
		env := []string{"HOME=" + home, "XDG_STATE_HOME=" + st, "LOCALAPPDATA=" + st}
		out, _, status := runCmdEnv(t, Claude, env, "--help")
		want, ok := map[string]string{"linux": filepath.Join(st, "dual-proxy", "launcher.log"),
			"darwin":  filepath.Join(home, "Library", "Logs", "dual-proxy", "launcher.log"),
			"windows": filepath.Join(st, "dual-proxy", "logs", "launcher.log")}[runtime.GOOS]
		if want = "(default: " + want + ")"; !ok || status != 0 || !strings.Contains(out, want) {
			t.Fatalf("status %d: no %q in\n%s", status, want, out)
		}
	})
}

// TestBusyPortNamesTheInstance: when every port to listen on is taken and
// a registered instance holds one, the one-line error says so, for the
// standalone proxy and a launcher (SPEC LIS-1, OPS-6: a
// second `dual-proxy` beside a systemd unit learns who holds the port).
func TestBusyPortNamesTheInstance(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	port := addr[strings.LastIndex(addr, ":")+1:]
	env := []string{"XDG_RUNTIME_DIR=" + t.TempDir()}
	want := "; already running there: dual-proxy (pid " + fmt.Sprint(os.Getpid()) + ") on " + addr + " (dual-proxy status shows it; --listen-port picks another port)"
	t.Run("LIS-1/busy-port-without-a-registered-holder-says-nothing-more", func(t *testing.T) {
		_, errOut, status := runCmd(t, DualProxy, env, "--listen-port", port, "--health-url", "")
		if status != 1 || !strings.Contains(errOut, "all in use") || strings.Contains(errOut, "already running") {
			t.Fatalf("status %d err %q", status, errOut)
		}
	})
	reg, err := registry.Register(registryDir(env), registry.Entry{Program: "dual-proxy", Addr: addr}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Remove()
	t.Run("LIS-1/busy-port-names-the-registered-instance", func(t *testing.T) {
		_, errOut, status := runCmd(t, DualProxy, env, "--listen-port", port, "--health-url", "")
		if status != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "all in use") || !strings.Contains(errOut, want) {
			t.Fatalf("status %d err %q", status, errOut)
		}
	})
	t.Run("LIS-1/launcher-busy-port-names-the-registered-instance", func(t *testing.T) {
		_, errOut, status := runCmd(t, DualProxy, env, append([]string{"run", "--listen-port", port, "--port-fallback", "0", "--health-url", "", "--"}, testworld.Child(t, "exit", "0")...)...)
		if status != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, want) {
			t.Fatalf("status %d err %q", status, errOut)
		}
	})
}
