//go:build agents

// Every supported agent on the pool from a fresh HOME, and the agents' own
// files that bypass the launcher (SPEC OPS-8, POOL-20, POOL-21): Claude
// Code, Codex, Gemini CLI, Qwen Code, OpenCode and Cline each run one prompt on a
// pool whose first member answers every call 529 and whose second member
// speaks another API than the agent; then the files that undo the
// launcher are shown by what the real agent does: a lower-case
// env.https_proxy in ~/.claude/settings.json sends claude to that proxy and
// the launcher warns, an upper-case one is never read and there is no
// warning, HTTPS_PROXY and HTTP_PROXY in ~/.codex/.env send codex to that
// proxy and the launcher warns. The versions of the CLIs are in the test log.
//
//	go test -race -tags agents -count=1 -run AgentsOnPool ./cmd/dual-proxy/
//
// Needs root (ip netns), iproute2 and DUAL_PROXY_AGENTS_DIR: an npm
// prefix holding @anthropic-ai/claude-code, @openai/codex,
// @google/gemini-cli, @qwen-code/qwen-code, opencode-ai and cline (.ci/run
// prepares one).
package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/agentlab"
)

// poolAgent is one agent's case on the pool: the command after the
// agent's executable, the API of its failing first member and of its
// second member, and what the agent's environment needs beside xEnv.
type poolAgent struct {
	name, pkg, first, second string
	args                     []string
	env                      func(t *testing.T) []string
	// models are the pool's unified models (none: every id accepted);
	// when given, every call must name the first (the preset's default).
	models []string
}

// configAPI is a channel's api: in the pool configuration for the API a
// mock speaks.
var configAPI = map[string]string{"anthropic": "anthropic", "openai-chat": "openai-chat", "responses": "openai", "gemini": "gemini"}

// apiPath is the path prefix of a model call in api.
var apiPath = map[string]string{"anthropic": "/v1/messages", "openai-chat": "/v1/chat/completions", "responses": "/v1/responses", "gemini": "/v1beta/models/"}

// geminiHome is Gemini CLI's environment beside xEnv: a HOME that root
// owns up to / (not under the world-writable temporary directory), as
// root's own home is, and no XDG_RUNTIME_DIR (root shells, ssh, cron and
// containers have none): Gemini CLI reads the launcher's settings file only
// from such a place (docs/agents.md). The workspace is trusted as
// docs/agents.md says (GEMINI_CLI_TRUST_WORKSPACE=true), else gemini exits 55.
func geminiHome(t *testing.T) []string {
	dir, err := os.MkdirTemp("/run", "dpx-agents-home-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return []string{"GEMINI_CLI_TRUST_WORKSPACE=true", "HOME=" + dir}
}

// quietClaude, quietOpenCode and quietQwen turn off what these agents
// fetch from the network beside the model calls (Claude Code's telemetry,
// update checks and error reports to api.anthropic.com; models list,
// updates, default plugins, preconnects): the namespace has no network, so
// those attempts can only fail, they put CONNECTs nobody asked for in the
// launcher's log, and the case is about the pool.
func quietClaude(*testing.T) []string {
	return []string{"DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
}

func quietOpenCode(*testing.T) []string {
	return []string{"OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_DEFAULT_PLUGINS=1", "OPENCODE_DISABLE_LSP_DOWNLOAD=1"}
}

func quietQwen(*testing.T) []string {
	return []string{"QWEN_CODE_DISABLE_PRECONNECT=1", "QWEN_DISABLE_AUTO_TITLE=1"}
}

var poolAgents = []poolAgent{
	{name: "claude", pkg: "@anthropic-ai/claude-code", first: "anthropic", second: "gemini", args: []string{"-p", "say ok"}, env: quietClaude},
	{name: "codex", pkg: "@openai/codex", first: "responses", second: "gemini", args: []string{"exec", "--skip-git-repo-check", "say ok"}},
	{name: "gemini", pkg: "@google/gemini-cli", first: "gemini", second: "anthropic", args: []string{"-m", "gemini-2.5-flash", "-p", "say ok"}, env: geminiHome},
	{name: "qwen", pkg: "@qwen-code/qwen-code", first: "openai-chat", second: "anthropic", args: []string{"-p", "say ok"}, env: quietQwen},
	// Without -m: the preset's default model is the pool's first unified model.
	{name: "opencode", pkg: "opencode-ai", first: "anthropic", second: "openai-chat", args: []string{"run", "say ok"}, env: quietOpenCode, models: []string{"fast", "deep"}},
	// Cline 3.0 calls api.cline.bot unless its provider settings say
	// otherwise: the preset's file selects its OpenAI-compatible provider.
	{name: "cline", pkg: "cline", first: "openai-chat", second: "anthropic", args: []string{"say ok"}, models: []string{"fast"}},
}

func TestAgentsOnPool(t *testing.T) {
	tools := agentlab.BuildTools(t)
	mock := tools.MockLLM
	l := agentlab.New(t)
	for _, a := range poolAgents {
		t.Logf("%s: %s %s", a.name, a.pkg, agentVersion(t, a.pkg))
	}
	// The agents mostly wait (start-up, their own retries of what the
	// namespace cannot reach): in parallel, the five take about as long as
	// the slowest.
	t.Run("OPS-8/every-agent-on-pool", func(t *testing.T) {
		for i, a := range poolAgents {
			t.Run("OPS-8/POOL-20/"+a.name+"-on-pool-from-fresh-home-fails-over-to-"+a.second+"-member", func(t *testing.T) {
				t.Parallel()
				testAgentOnPool(t, l, mock, i, a)
			})
		}
	})
	testBypassFiles(t, l, tools)
}

// agentVersion is the version of npm package pkg in DUAL_PROXY_AGENTS_DIR
// (its package.json), for the test log.
func agentVersion(t *testing.T, pkg string) string {
	b, err := os.ReadFile(filepath.Join(os.Getenv("DUAL_PROXY_AGENTS_DIR"), "node_modules", pkg, "package.json"))
	var doc struct{ Version string }
	if err != nil || json.Unmarshal(b, &doc) != nil {
		t.Fatalf("DUAL_PROXY_AGENTS_DIR has no %s: %v", pkg, err)
	}
	return doc.Version
}

// testAgentOnPool runs agent a (case i of poolAgents, which picks its
// ports) from a fresh HOME on a pool whose first member answers 529 and
// whose second speaks a.second: the agent prints the second member's
// answer, and the launcher warns about nothing.
func testAgentOnPool(t *testing.T, l *agentlab.Lab, mock string, i int, a poolAgent) {
	exe := agentBin(t, a.name)
	home, cwd := t.TempDir(), t.TempDir()
	p1, p2 := 18210+2*i, 18211+2*i
	members := []xMember{
		{id: a.name[:2] + "1", api: configAPI[a.first], speaks: a.first, port: strconv.Itoa(p1), failAll: true},
		{id: a.name[:2] + "2", api: configAPI[a.second], speaks: a.second, port: strconv.Itoa(p2)},
	}
	cfg, logs := startXPool(t, l, mock, members, a.models...)
	env := xEnv(home, members)
	if a.env != nil {
		env = append(env, a.env(t)...)
	}
	logFile := filepath.Join(t.TempDir(), "launcher.log")
	cmd := l.Command(env, append([]string{bin, "run", "--health-url", "", "--log-file", logFile, "--config", cfg, "--pool", "px", "--", exe}, a.args...)...)
	cmd.Dir = cwd
	r := agentlab.Run(t, cmd, 180*time.Second)
	t.Logf("%s on a pool failing over to a %s member: %v", a.name, a.second, r.Elapsed)
	served := modelCalls(agentlab.ReadJSONL(t, logs[members[1].id]), 200)
	failed := modelCalls(agentlab.ReadJSONL(t, logs[members[0].id]), 529)
	if r.Status != 0 || !strings.Contains(r.Stdout, "ok") {
		t.Fatalf("status %d stdout %q\nstderr: %s\nmember 2: %s\nlauncher log:\n%s", r.Status, r.Stdout, r.Stderr, agentSummary(served), readFile(logFile))
	}
	if len(failed) == 0 || len(served) == 0 {
		t.Fatalf("member 1 failed %d calls, member 2 served %d; want both ≥1", len(failed), len(served))
	}
	for _, e := range served {
		if p, _ := e["path"].(string); !strings.HasPrefix(p, apiPath[a.second]) {
			t.Fatalf("a %s member was sent %v", a.second, p)
		}
		if body, _ := e["body"].(map[string]any); len(a.models) > 0 && body["model"] != a.models[0] {
			t.Fatalf("a call for model %v, want the pool's first model %s", body["model"], a.models[0])
		}
	}
	if strings.Contains(r.Stderr, "dual-proxy: warning:") {
		t.Fatalf("a fresh HOME got a warning:\n%s", r.Stderr)
	}
	t.Run("POOL-5/"+a.name+"-session-identity-as-docs-say", func(t *testing.T) {
		// The members get the agent's headers (member 1 speaks its API).
		checkSessionDocs(t, a.name, append(agentlab.ReadJSONL(t, logs[members[0].id]), agentlab.ReadJSONL(t, logs[members[1].id])...))
	})
}

// docsAgent is each agent's row label in docs/agents.md's table of presets.
var docsAgent = map[string]string{"claude": "Claude Code", "codex": "Codex CLI", "gemini": "Gemini CLI", "qwen": "Qwen Code", "opencode": "OpenCode", "cline": "Cline"}

// sessionHeaders are the session headers the pool reads (SPEC POOL-5,
// pool/balance.SessionIdentity), lower case.
var sessionHeaders = []string{"x-session-id", "x-claude-code-session-id", "session_id", "session-id", "x-session-affinity", "x-opencode-session", "x-amp-thread-id", "x-qwen-code-session-id"}

// checkSessionDocs compares the session headers agent sent in calls (the
// members' request logs) with its row of docs/agents.md's table of presets
// (SPEC POOL-5): a row naming headers (backquoted, with a hyphen) needs one
// of them sent; a row naming none needs no session header sent.
func checkSessionDocs(t *testing.T, agent string, calls []map[string]any) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "agents.md"))
	if err != nil {
		t.Fatal(err)
	}
	var row string
	inTable := false
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "| agent | API it speaks |"):
			inTable = true
		case inTable && !strings.HasPrefix(line, "|"):
			inTable = false
		case inTable && strings.HasPrefix(line, "| "+docsAgent[agent]+" |"):
			row = line
		}
	}
	cells := strings.Split(row, "|")
	if len(cells) != 6 {
		t.Fatalf("docs/agents.md has no row %q in its table of presets", docsAgent[agent])
	}
	var documented []string
	for i, part := range strings.Split(cells[4], "`") {
		if i%2 == 1 && strings.Contains(part, "-") && !strings.ContainsAny(part, " ._…") {
			documented = append(documented, strings.ToLower(part))
		}
	}
	sent := map[string]bool{}
	for _, c := range calls {
		h, _ := c["headers"].(map[string]any)
		for k := range h {
			for _, s := range sessionHeaders {
				if strings.EqualFold(k, s) {
					sent[s] = true
				}
			}
		}
	}
	if len(documented) == 0 {
		if len(sent) != 0 {
			t.Fatalf("docs/agents.md says %s sends no session header; it sent %v", docsAgent[agent], sent)
		}
		return
	}
	for _, d := range documented {
		if sent[d] {
			return
		}
	}
	t.Fatalf("docs/agents.md says %s sends %v; it sent %v (%d calls)", docsAgent[agent], documented, sent, len(calls))
}

// Ports of the bypass cases: the proxy an agent's file names (the logging
// gateway, agentlab.Tools.Gateway, which dials only loopback) and the
// mock endpoint reached by host name (mock.test, so not through NO_PROXY).
const (
	fileProxyPort = "18241"
	bypassMock    = "18242"
)

// testBypassFiles runs the override-file classes with the real agents:
// the traffic is where the agent really sends it, and the launcher warns
// exactly when that is past the launcher (SPEC OPS-8).
func testBypassFiles(t *testing.T, l *agentlab.Lab, tools agentlab.Tools) {
	mock := tools.MockLLM
	proxyLog := l.StartGateway(t, tools.Gateway, fileProxyPort, "mock.test:"+bypassMock+"=127.0.0.1:"+bypassMock)
	mockLog := l.StartMockLLM(t, mock, bypassMock, "-api", "anthropic")
	fileProxy := "http://127.0.0.1:" + fileProxyPort
	claude := func(t *testing.T, settings string, flags ...string) (agentlab.Result, []map[string]any, []map[string]any, string) {
		home, cwd := t.TempDir(), t.TempDir()
		if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, ".claude", "settings.json"), []byte(settings), 0o600); err != nil {
			t.Fatal(err)
		}
		logFile := filepath.Join(t.TempDir(), "launcher.log")
		proxyBefore, mockBefore := len(agentlab.ReadJSONL(t, proxyLog)), len(agentlab.ReadJSONL(t, mockLog))
		env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8", "DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
			"ANTHROPIC_BASE_URL=http://mock.test:" + bypassMock, "ANTHROPIC_AUTH_TOKEN=sk-test"}
		args := append([]string{bin, "run", "--health-url", "", "--log-file", logFile, "--log-level", "debug", "--log-format", "json"}, flags...)
		cmd := l.Command(env, append(args, "--", agentBin(t, "claude"), "-p", "say ok")...)
		cmd.Dir = cwd
		r := agentlab.Run(t, cmd, 120*time.Second)
		return r, agentlab.ReadJSONL(t, proxyLog)[proxyBefore:], agentlab.ReadJSONL(t, mockLog)[mockBefore:], logFile
	}

	throughLauncher := func(t *testing.T, settings string, flags ...string) {
		t.Helper()
		r, atFile, atMock, logFile := claude(t, settings, flags...)
		if r.Status != 0 || strings.Contains(r.Stderr, "dual-proxy: warning") || strings.TrimSpace(r.Stdout) != "ok" {
			t.Fatalf("status %d stdout %q, want 0, ok and no warning\nstderr: %s", r.Status, r.Stdout, r.Stderr)
		}
		if len(atFile) != 0 || len(atMock) != 1 {
			t.Fatalf("the file's proxy saw %d requests (want 0), the mock %d (want 1)", len(atFile), len(atMock))
		}
		routed := false
		for _, rec := range agentlab.ReadJSONL(t, logFile) {
			routed = routed || (rec["msg"] == "routed" && rec["host"] == "mock.test")
		}
		if !routed {
			t.Fatal("the launcher's log has no routed record for mock.test: claude did not use the launcher")
		}
	}
	t.Run("OPS-8/claude-lower-case-https-proxy-in-settings-pinned-by-launcher-no-warning", func(t *testing.T) {
		// The launcher passes what it set through Claude Code's --settings
		// layer, above the user's settings.json: the file's proxy is not
		// obeyed, and there is nothing to warn about.
		throughLauncher(t, `{"env":{"https_proxy":"`+fileProxy+`"}}`)
	})
	t.Run("OPS-8/claude-lower-case-https-proxy-in-settings-bypasses-and-is-warned", func(t *testing.T) {
		// Without the launcher's --settings layer (--no-agent-presets) the
		// file's https_proxy is obeyed: the first row of Claude Code's table.
		r, atFile, atMock, _ := claude(t, `{"env":{"https_proxy":"`+fileProxy+`"}}`, "--no-agent-presets")
		want := "warning: " + filepath.Join("~", ".claude", "settings.json") + " sets env.https_proxy, which Claude Code applies over the launcher's value: claude will not use dual-proxy as launched (remove the key)"
		if r.Status != 0 || !strings.Contains(r.Stderr, want) {
			t.Fatalf("status %d, want 0 and the warning %q\nstderr: %s", r.Status, want, r.Stderr)
		}
		if len(atFile) == 0 || len(atMock) == 0 {
			t.Fatalf("the file's proxy saw %d requests, the mock %d: claude did not go through the file's proxy", len(atFile), len(atMock))
		}
		for _, e := range atFile {
			if tg, _ := e["target"].(string); !strings.Contains(tg, "mock.test:"+bypassMock) {
				t.Fatalf("the file's proxy saw %v", e)
			}
		}
	})

	t.Run("OPS-8/claude-http-proxy-in-settings-not-obeyed-no-warning", func(t *testing.T) {
		// Claude Code's proxy is the first set of https_proxy, HTTPS_PROXY,
		// http_proxy, HTTP_PROXY: the launcher's https_proxy wins.
		throughLauncher(t, `{"env":{"http_proxy":"`+fileProxy+`"}}`, "--no-agent-presets")
	})

	t.Run("OPS-8/claude-upper-case-https-proxy-in-settings-not-read-no-warning", func(t *testing.T) {
		throughLauncher(t, `{"env":{"HTTPS_PROXY":"`+fileProxy+`","HTTP_PROXY":"`+fileProxy+`"}}`, "--no-agent-presets")
	})

	t.Run("OPS-8/codex-dotenv-lower-case-proxy-model-call-through-launcher-commands-warned", func(t *testing.T) {
		// Codex's HTTP client reads HTTPS_PROXY and HTTP_PROXY first, which
		// the launcher set: its model call goes through the launcher (to the
		// pool); the commands it runs (git) read https_proxy first, so they
		// go to the file's proxy, and that is what the warning says.
		members := []xMember{{id: "e1", api: "openai", speaks: "responses", port: "18244"}}
		cfg, logs := startXPool(t, l, mock, members)
		home, cwd := t.TempDir(), t.TempDir()
		if err := os.MkdirAll(filepath.Join(home, ".codex"), 0o700); err != nil {
			t.Fatal(err)
		}
		dotenv := "https_proxy=" + fileProxy + "\n"
		if err := os.WriteFile(filepath.Join(home, ".codex", ".env"), []byte(dotenv), 0o600); err != nil {
			t.Fatal(err)
		}
		proxyBefore := len(agentlab.ReadJSONL(t, proxyLog))
		cmd := l.Command(xEnv(home, members), bin, "run", "--health-url", "", "--config", cfg, "--pool", "px", "--",
			agentBin(t, "codex"), "exec", "--skip-git-repo-check", "say ok")
		cmd.Dir = cwd
		r := agentlab.Run(t, cmd, 120*time.Second)
		atFile := agentlab.ReadJSONL(t, proxyLog)[proxyBefore:]
		want := "dual-proxy: warning: " + filepath.Join("~", ".codex", ".env") + " sets https_proxy, which Codex loads over the launcher's environment at start, and the commands it runs (git, curl) read for https:// URLs before the launcher's HTTPS_PROXY"
		if r.Status != 0 || !strings.Contains(r.Stderr, want) || len(modelCalls(agentlab.ReadJSONL(t, logs["e1"]), 200)) == 0 {
			t.Fatalf("status %d, want 0, the warning %q and the model call at the pool\nstderr: %s", r.Status, want, r.Stderr)
		}
		for _, e := range atFile {
			if ua, _ := e["user_agent"].(string); !strings.HasPrefix(ua, "git/") {
				t.Fatalf("the file's proxy saw a request of codex itself, not of a command it runs: %v", e)
			}
		}
		t.Logf("lower-case https_proxy in ~/.codex/.env: %d requests of the commands codex ran at the file's proxy", len(atFile))
	})

	t.Run("OPS-8/codex-dotenv-proxy-bypasses-and-is-warned", func(t *testing.T) {
		members := []xMember{{id: "d1", api: "openai", speaks: "responses", port: "18243"}}
		cfg, logs := startXPool(t, l, mock, members)
		home, cwd := t.TempDir(), t.TempDir()
		if err := os.MkdirAll(filepath.Join(home, ".codex"), 0o700); err != nil {
			t.Fatal(err)
		}
		dotenv := "HTTPS_PROXY=" + fileProxy + "\nHTTP_PROXY=" + fileProxy + "\n"
		if err := os.WriteFile(filepath.Join(home, ".codex", ".env"), []byte(dotenv), 0o600); err != nil {
			t.Fatal(err)
		}
		proxyBefore := len(agentlab.ReadJSONL(t, proxyLog))
		cmd := l.Command(xEnv(home, members), bin, "run", "--health-url", "", "--config", cfg, "--pool", "px", "--",
			agentBin(t, "codex"), "exec", "--skip-git-repo-check", "say ok")
		cmd.Dir = cwd
		r := agentlab.Run(t, cmd, 120*time.Second)
		atFile := agentlab.ReadJSONL(t, proxyLog)[proxyBefore:]
		t.Logf("codex with a proxy in ~/.codex/.env: status %d in %v, %d requests at the file's proxy, %d at the pool's member",
			r.Status, r.Elapsed, len(atFile), len(agentlab.ReadJSONL(t, logs["d1"])))
		for _, key := range []string{"HTTPS_PROXY", "HTTP_PROXY"} {
			want := "warning: " + filepath.Join("~", ".codex", ".env") + " sets " + key + ", which Codex loads over the launcher's environment at start: codex will not use dual-proxy as launched (remove it from the file)"
			if !strings.Contains(r.Stderr, want) {
				t.Fatalf("no warning %q\nstderr: %s", want, r.Stderr)
			}
		}
		if len(atFile) == 0 {
			t.Fatalf("the file's proxy saw no request: codex did not obey its .env\nstderr: %s", r.Stderr)
		}
	})
}
