//go:build agents

// Real-agent tests (SPEC RUN-1, the launcher as Claude Code runs it): the real Claude
// Code CLI (npm @anthropic-ai/claude-code) runs as claude-dual-proxy's
// child inside a loopback-only network namespace the test creates, and
// talks to the mock model endpoint (internal/testbed/mockllm's command, all three
// APIs on one port) through the launcher's proxy.
//
//	go test -race -tags agents -count=1 ./cmd/claude-dual-proxy/
//
// Needs root (ip netns), iproute2, and either
// DUAL_PROXY_AGENTS_DIR (an `npm install --prefix DIR
// @anthropic-ai/claude-code` tree; .ci/run prepares one) or npm, with
// which the test installs the package into a temporary directory.
package main

import (
	"context"
	"encoding/json"
	"github.com/dual-proxy/dual-proxy/internal/testbed/agentlab"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// agentsDirEnv names the npm prefix that holds @anthropic-ai/claude-code.
const agentsDirEnv = "DUAL_PROXY_AGENTS_DIR"

// Fixed ports inside the test's own namespace: nothing else listens there.
const (
	mockPort    = "18080" // the mock model endpoint (agentlab.Tools.MockLLM)
	gatewayPort = "18888" // the logging gateway (agentlab.Tools.Gateway), the working one
	deadPort    = "7897"  // the default first gateway; nothing listens on it in the namespace
	apiKey      = "sk-test"
)

func TestAgents(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // registered first: runs after the servers are stopped
	claude := claudePath(t)
	bin := buildLauncher(t)
	tools := agentlab.BuildTools(t)
	l := agentlab.New(t)
	mockLog := l.StartMockLLM(t, tools.MockLLM, mockPort, "-api", "all")
	gwLog := l.StartGateway(t, tools.Gateway, gatewayPort, "mock.test:"+mockPort+"=127.0.0.1:"+mockPort)

	t.Run("RUN-1/claude-version-through-launcher", func(t *testing.T) {
		h := newHome(t)
		r := agentlab.Run(t, h.command(l, bin, "--health-url", "", "--log-file", h.logFile, "--command", claude, "--", "--version"), 60*time.Second)
		if r.Status != 0 {
			t.Fatalf("status %d, want 0 (RUN-3)\nstdout: %s\nstderr: %s", r.Status, r.Stdout, r.Stderr)
		}
		if !regexp.MustCompile(`^\d+\.\d+\.\d+ \(Claude Code\)\n$`).MatchString(r.Stdout) {
			t.Fatalf("stdout %q, want `X.Y.Z (Claude Code)`", r.Stdout)
		}
		t.Logf("%s in %v", strings.TrimSpace(r.Stdout), r.Elapsed)
	})

	t.Run("RUN-3/claude-error-status-and-stderr-pass-through", func(t *testing.T) {
		h := newHome(t)
		direct := agentlab.Run(t, h.command(l, claude, "--no-such-option-dual-proxy"), 60*time.Second)
		if direct.Status == 0 {
			t.Fatalf("claude accepted an unknown option; stderr %q", direct.Stderr)
		}
		r := agentlab.Run(t, h.command(l, bin, "--health-url", "", "--log-file", h.logFile, "--command", claude, "--", "--no-such-option-dual-proxy"), 60*time.Second)
		if r.Status != direct.Status {
			t.Fatalf("launcher status %d, claude alone %d", r.Status, direct.Status)
		}
		if !strings.Contains(r.Stderr, "no-such-option-dual-proxy") {
			t.Fatalf("claude's error did not reach stderr: %q", r.Stderr)
		}
	})

	// The dead first gateway refuses, the working gateway (the logging one)
	// carries the request to mock.test; claude only knows the launcher's
	// proxy (ENV-1), so the gateway's record proves the request crossed it.
	t.Run("RUN-1/claude-p-dead-gateway-then-working-gateway", func(t *testing.T) {
		h := newHome(t)
		mockBefore, gwBefore := countLines(t, mockLog), countLines(t, gwLog)
		r := agentlab.Run(t, h.command(l, bin, "--health-url", "", "--log-file", h.logFile, "--log-level", "debug", "--log-format", "json",
			"--upstream-port", deadPort, "--gateway", "127.0.0.1:"+gatewayPort, "--command", claude, "--", "-p", "say ok"), 90*time.Second)
		checkOK(t, r, h)
		t.Logf("claude -p through the working gateway: %v", r.Elapsed)
		// Claude Code 2.1.332 also opens a tunnel to its API host ahead of
		// the call (a preconnect, CONNECT mock.test, no bytes of a request):
		// the records other than that are the call.
		var gw []map[string]any
		for _, rec := range agentlab.ReadJSONL(t, gwLog)[gwBefore:] {
			if rec["kind"] == "CONNECT" && rec["target"] == "mock.test:"+mockPort {
				continue
			}
			gw = append(gw, rec)
		}
		if len(gw) != 1 || gw[0]["kind"] != "HTTP" || gw[0]["method"] != "POST" ||
			!strings.HasPrefix(str(gw[0]["target"]), "http://mock.test:"+mockPort+"/v1/messages") ||
			!strings.HasPrefix(str(gw[0]["user_agent"]), "claude-cli/") {
			t.Fatalf("working gateway saw %v, want one absolute-form POST to mock.test /v1/messages from claude-cli", gw)
		}
		checkMock(t, mockLog, mockBefore)
		recs := agentlab.ReadJSONL(t, h.logFile)
		checkRouted(t, recs, "http://127.0.0.1:"+gatewayPort)
		if !hasRecord(recs, func(r map[string]any) bool {
			return r["host"] == "mock.test" && r["candidate"] == "http://127.0.0.1:"+deadPort && r["phase"] == "gateway-connect"
		}) {
			t.Fatalf("launcher log has no gateway-connect failure of the dead gateway for mock.test (CD-3):\n%s", dump(recs))
		}
	})

	// No gateway answers: the dead first gateway fails and direct serves;
	// the proxy itself resolves mock.test (namespace hosts file).
	t.Run("RUN-1/claude-p-dead-gateway-then-direct", func(t *testing.T) {
		h := newHome(t)
		mockBefore, gwBefore := countLines(t, mockLog), countLines(t, gwLog)
		r := agentlab.Run(t, h.command(l, bin, "--health-url", "", "--log-file", h.logFile, "--log-level", "debug", "--log-format", "json",
			"--upstream-port", deadPort, "--command", claude, "--", "-p", "say ok"), 90*time.Second)
		checkOK(t, r, h)
		t.Logf("claude -p direct: %v", r.Elapsed)
		if n := countLines(t, gwLog) - gwBefore; n != 0 {
			t.Fatalf("the logging gateway saw %d requests though it is no candidate", n)
		}
		checkMock(t, mockLog, mockBefore)
		checkRouted(t, agentlab.ReadJSONL(t, h.logFile), "direct")
	})

	t.Run("SIG-1/claude-interactive-tui-on-pty", func(t *testing.T) { testInteractive(t, l, bin, claude) })
}

// home is a fresh HOME with a pre-seeded ~/.claude.json that skips
// onboarding and trusts the working directory.
type home struct {
	dir, cwd, logFile string
}

func newHome(t *testing.T) *home {
	t.Helper()
	h := &home{dir: t.TempDir(), cwd: t.TempDir()}
	h.logFile = filepath.Join(t.TempDir(), "launcher.log")
	seed := map[string]any{
		"hasCompletedOnboarding": true,
		"theme":                  "dark",
		"customApiKeyResponses":  map[string]any{"approved": []string{apiKey[max(0, len(apiKey)-20):]}, "rejected": []string{}},
		"projects":               map[string]any{h.cwd: map[string]any{"hasTrustDialogAccepted": true}},
	}
	b, err := json.Marshal(seed)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.dir, ".claude.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return h
}

// env is the child's whole environment: no proxy variables from the
// machine, telemetry and non-essential traffic off, the mock as base URL.
func (h *home) env() []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + h.dir,
		"LANG=C.UTF-8",
		"DISABLE_TELEMETRY=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"ANTHROPIC_BASE_URL=http://mock.test:" + mockPort,
		"ANTHROPIC_API_KEY=" + apiKey,
	}
}

// command runs argv inside l with h's environment, in h's trusted
// working directory.
func (h *home) command(l *agentlab.Lab, argv ...string) *exec.Cmd {
	cmd := l.Command(h.env(), argv...)
	cmd.Dir = h.cwd
	return cmd
}

// checkOK asserts claude printed the mock's reply and exited 0.
func checkOK(t *testing.T, r agentlab.Result, h *home) {
	t.Helper()
	if r.Status != 0 || strings.TrimSpace(r.Stdout) != "ok" {
		log, _ := os.ReadFile(h.logFile)
		t.Fatalf("status %d stdout %q, want 0 and \"ok\"\nstderr: %s\nlauncher log:\n%s", r.Status, r.Stdout, r.Stderr, log)
	}
}

// checkMock asserts the mock got exactly one new request, claude's POST
// /v1/messages (the pre-warm HEAD / is absent when a proxy is set).
func checkMock(t *testing.T, mockLog string, before int) {
	t.Helper()
	got := agentlab.ReadJSONL(t, mockLog)[before:]
	if len(got) != 1 || got[0]["method"] != "POST" || !strings.HasPrefix(str(got[0]["path"]), "/v1/messages") {
		var lines []string
		for _, e := range got {
			lines = append(lines, str(e["method"])+" "+str(e["path"]))
		}
		t.Fatalf("mock saw %v, want one POST /v1/messages", lines)
	}
}

// checkRouted asserts the launcher's log (OPS-1) records the request to
// mock.test as served by want, and no decision for any other host (no
// telemetry or update traffic reached the proxy).
func checkRouted(t *testing.T, recs []map[string]any, want string) {
	t.Helper()
	if !hasRecord(recs, func(r map[string]any) bool {
		return r["msg"] == "routed" && r["host"] == "mock.test" && r["candidate"] == want
	}) {
		t.Fatalf("launcher log has no `routed` record for host mock.test with candidate %s:\n%s", want, dump(recs))
	}
	for _, r := range recs {
		if r["msg"] == "routed" && r["host"] != "mock.test" {
			t.Fatalf("the proxy routed a request to %v, want only mock.test:\n%s", r["host"], dump(recs))
		}
	}
}

func hasRecord(recs []map[string]any, f func(map[string]any) bool) bool {
	for _, r := range recs {
		if f(r) {
			return true
		}
	}
	return false
}

func dump(recs []map[string]any) string {
	var b strings.Builder
	for _, r := range recs {
		j, _ := json.Marshal(r)
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

func str(v any) string { s, _ := v.(string); return s }

func countLines(t *testing.T, path string) int { return len(agentlab.ReadJSONL(t, path)) }

// claudePath is the claude executable: from $DUAL_PROXY_AGENTS_DIR, else
// installed with npm into a temporary prefix (~10 s; a native binary).
func claudePath(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(agentsDirEnv)
	if dir == "" {
		if _, err := exec.LookPath("npm"); err != nil {
			t.Fatalf("set %s to an npm prefix holding @anthropic-ai/claude-code, or install npm", agentsDirEnv)
		}
		dir = t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		start := time.Now()
		out, err := exec.CommandContext(ctx, "npm", "install", "--prefix", dir, "--no-audit", "--no-fund", "@anthropic-ai/claude-code").CombinedOutput()
		if err != nil {
			t.Fatalf("npm install @anthropic-ai/claude-code: %v\n%s", err, out)
		}
		t.Logf("npm install @anthropic-ai/claude-code: %v", time.Since(start))
	}
	p := filepath.Join(dir, "node_modules", ".bin", "claude")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s: no claude executable: %v", agentsDirEnv, err)
	}
	return p
}

// buildLauncher builds claude-dual-proxy into a temporary directory.
func buildLauncher(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "claude-dual-proxy")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}
