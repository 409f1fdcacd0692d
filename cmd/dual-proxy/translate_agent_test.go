//go:build agents

// Real agents on pools whose members speak another API (SPEC POOL-21,
// POOL-7): `claude -p` on OpenAI Chat members, `codex exec` on Anthropic
// members, `gemini -p` on OpenAI Chat members. Each pool has two members
// in failover order; the first answers every call 529, so each call fails
// over silently to the second, across flavours. The members are mockllm
// processes (internal/testbed/mockllm/cmd/mockllm) that speak only their own API,
// inside a loopback-only network namespace (internal/testbed/agentlab).
//
//	go test -race -tags agents -count=1 -run TranslatedAgent ./cmd/dual-proxy/
//
// Needs root (ip netns), iproute2 and DUAL_PROXY_AGENTS_DIR: an npm prefix
// holding @anthropic-ai/claude-code, @openai/codex and @google/gemini-cli
// (.ci/run prepares one).
package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/agentlab"
)

// agentBin is the named CLI in DUAL_PROXY_AGENTS_DIR.
func agentBin(t *testing.T, name string) string {
	t.Helper()
	dir := os.Getenv("DUAL_PROXY_AGENTS_DIR")
	if dir == "" {
		t.Fatal("set DUAL_PROXY_AGENTS_DIR to an npm prefix holding the agent CLIs (.ci/run prepares /tmp/dual-proxy-agents)")
	}
	p := filepath.Join(dir, "node_modules", ".bin", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("DUAL_PROXY_AGENTS_DIR has no %s: %v", name, err)
	}
	return p
}

// buildMockLLM builds the mock channel command once per test.
func buildMockLLM(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "mockllm")
	if b, err := exec.Command("go", "build", "-o", out, "../../internal/testbed/mockllm/cmd/mockllm").CombinedOutput(); err != nil {
		t.Fatalf("build mockllm: %v\n%s", err, b)
	}
	return out
}

// xMember is one mock channel: its config api, the API its mock speaks.
type xMember struct {
	id, api, speaks, port string
	failAll               bool
	tool, toolArgs        string
}

// startXPool starts the members inside l and writes the config of pool
// "px" (failover order, 1 ms cooldowns, the unified models when given). It
// returns the config path and each member's request log.
func startXPool(t *testing.T, l *agentlab.Lab, mock string, members []xMember, models ...string) (string, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	logs := map[string]string{}
	y := "channels:\n"
	var ids []string
	for _, m := range members {
		logs[m.id] = filepath.Join(dir, m.id+".jsonl")
		args := []string{mock, "-addr", "127.0.0.1:" + m.port, "-api", m.speaks, "-log", logs[m.id]}
		if m.failAll {
			args = append(args, "-fail-first", "100000", "-fail-status", "529")
		}
		if m.tool != "" {
			args = append(args, "-tool", m.tool, "-tool-args", m.toolArgs)
		}
		l.StartServer(t, "mockllm listening", args...)
		base := "http://127.0.0.1:" + m.port
		if m.api == "openai" {
			base += "/v1" // an OpenAI Responses channel's base URL ends in /v1, like the SDKs'
		}
		y += "  " + m.id + ": {api: " + m.api + ", base_url: \"" + base + "\", api_key_env: DP_" + strings.ToUpper(m.id) + "_KEY}\n"
		ids = append(ids, m.id)
	}
	y += "pools:\n  px:\n    strategy: failover\n    members: [" + strings.Join(ids, ", ") + "]\n    cooldown: {server_ms: 1}\n"
	if len(models) > 0 {
		y += "    models: [{id: " + strings.Join(models, "}, {id: ") + "}]\n"
	}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg, logs
}

// xEnv is a fresh HOME and the channel keys.
func xEnv(home string, members []xMember) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8"}
	for _, m := range members {
		env = append(env, "DP_"+strings.ToUpper(m.id)+"_KEY=sk-"+m.id+"-key-0123456789")
	}
	return env
}

// modelCalls are the logged model calls answered with status.
func modelCalls(entries []map[string]any, status float64) []map[string]any {
	var out []map[string]any
	for _, e := range entries {
		if e["mock_status"] == status {
			out = append(out, e)
		}
	}
	return out
}

func TestTranslatedAgents(t *testing.T) {
	mock := buildMockLLM(t)
	l := agentlab.New(t)

	t.Run("POOL-21/claude-on-openai-chat-members-tool-call-round-trip", func(t *testing.T) {
		claude := agentBin(t, "claude")
		cwd := t.TempDir()
		file := filepath.Join(cwd, "hello.txt")
		if err := os.WriteFile(file, []byte("the secret word is pelican-42\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		args, _ := json.Marshal(map[string]string{"file_path": file})
		members := []xMember{
			{id: "c1", api: "openai-chat", speaks: "openai-chat", port: "18111", failAll: true},
			{id: "c2", api: "openai-chat", speaks: "openai-chat", port: "18112", tool: "Read", toolArgs: string(args)},
		}
		cfg, logs := startXPool(t, l, mock, members)
		home := t.TempDir()
		cmd := l.Command(append(xEnv(home, members), quietClaude(t)...), bin, "run", "--health-url", "", "--config", cfg, "--pool", "px", "--",
			claude, "-p", "read hello.txt and tell me the secret word", "--allowedTools", "Read")
		cmd.Dir = cwd
		r := agentlab.Run(t, cmd, 180*time.Second)
		t.Logf("claude -p on a Chat-only pool: %v", r.Elapsed)
		if r.Status != 0 || !strings.Contains(r.Stdout, "ok") {
			t.Fatalf("status %d stdout %q\nstderr: %s", r.Status, r.Stdout, r.Stderr)
		}
		served := modelCalls(agentlab.ReadJSONL(t, logs["c2"]), 200)
		failed := modelCalls(agentlab.ReadJSONL(t, logs["c1"]), 529)
		if len(failed) == 0 || len(served) < 2 {
			t.Fatalf("member 1 failed %d calls, member 2 served %d; want ≥1 and ≥2", len(failed), len(served))
		}
		found := false
		for _, e := range append(served, failed...) {
			if e["path"] != "/v1/chat/completions" {
				t.Fatalf("a Chat member was sent %v", e["path"])
			}
			body, _ := e["body"].(map[string]any)
			msgs, _ := body["messages"].([]any)
			for _, m := range msgs {
				mm, _ := m.(map[string]any)
				content, _ := mm["content"].(string)
				if mm["role"] == "tool" && mm["tool_call_id"] == "call_mock_1" && strings.Contains(content, "pelican-42") {
					found = true
				}
			}
		}
		if !found {
			t.Fatalf("no OpenAI tool message with Claude Code's Read result reached the member:\n%s", agentSummary(served))
		}
	})

	t.Run("POOL-21/codex-exec-on-anthropic-members", func(t *testing.T) {
		codex := codexPath(t)
		members := []xMember{
			{id: "a1", api: "anthropic", speaks: "anthropic", port: "18121", failAll: true},
			{id: "a2", api: "anthropic", speaks: "anthropic", port: "18122"},
		}
		cfg, logs := startXPool(t, l, mock, members)
		home, cwd := t.TempDir(), t.TempDir()
		cmd := l.Command(append(xEnv(home, members), "OPENAI_API_KEY=sk-user-own"), bin, "run", "--health-url", "", "--config", cfg, "--pool", "px", "--",
			codex, "exec", "--skip-git-repo-check", "say ok")
		cmd.Dir = cwd
		r := agentlab.Run(t, cmd, 180*time.Second)
		t.Logf("codex exec on an Anthropic-only pool: %v", r.Elapsed)
		if r.Status != 0 || strings.TrimSpace(r.Stdout) != "ok" {
			t.Fatalf("status %d stdout %q\nstderr: %s", r.Status, r.Stdout, r.Stderr)
		}
		served := modelCalls(agentlab.ReadJSONL(t, logs["a2"]), 200)
		if len(served) == 0 || len(modelCalls(agentlab.ReadJSONL(t, logs["a1"]), 529)) == 0 {
			t.Fatalf("no failover: member 2 served %d calls", len(served))
		}
		for _, e := range served {
			body, _ := e["body"].(map[string]any)
			if e["path"] != "/v1/messages" || body["system"] == nil || body["max_tokens"] == nil {
				t.Fatalf("an Anthropic member was sent %v with %v", e["path"], agentSummary(served))
			}
		}
	})

	t.Run("POOL-21/codex-exec-custom-tool-call-via-anthropic-member", func(t *testing.T) {
		codex := codexPath(t)
		members := []xMember{
			{id: "b1", api: "anthropic", speaks: "anthropic", port: "18123", failAll: true},
			{id: "b2", api: "anthropic", speaks: "anthropic", port: "18124", tool: "exec", toolArgs: `{"input":"text(\"exec-marker-\" + (6*7))"}`},
		}
		cfg, logs := startXPool(t, l, mock, members)
		home, cwd := t.TempDir(), t.TempDir()
		cmd := l.Command(append(xEnv(home, members), "OPENAI_API_KEY=sk-user-own"), bin, "run", "--health-url", "", "--config", cfg, "--pool", "px", "--",
			codex, "exec", "--skip-git-repo-check", "compute 6*7 with the exec tool")
		cmd.Dir = cwd
		r := agentlab.Run(t, cmd, 180*time.Second)
		t.Logf("codex exec with a custom tool call on an Anthropic-only pool: %v", r.Elapsed)
		if r.Status != 0 || strings.TrimSpace(r.Stdout) != "ok" {
			t.Fatalf("status %d stdout %q\nstderr: %s", r.Status, r.Stdout, r.Stderr)
		}
		found := false
		for _, e := range modelCalls(agentlab.ReadJSONL(t, logs["b2"]), 200) {
			raw, _ := json.Marshal(e["body"])
			if strings.Contains(string(raw), `"tool_result"`) && strings.Contains(string(raw), "exec-marker-42") {
				found = true
			}
		}
		if !found {
			t.Fatalf("the exec tool's result never reached the Anthropic member as a tool_result:\n%s", agentSummary(agentlab.ReadJSONL(t, logs["b2"])))
		}
	})

	t.Run("POOL-21/gemini-on-openai-chat-members", func(t *testing.T) {
		gemini := agentBin(t, "gemini")
		members := []xMember{
			{id: "g1", api: "openai-chat", speaks: "openai-chat", port: "18131", failAll: true},
			{id: "g2", api: "openai-chat", speaks: "openai-chat", port: "18132"},
		}
		cfg, logs := startXPool(t, l, mock, members)
		cwd := t.TempDir()
		// No ~/.gemini/settings.json: the launcher's Gemini preset selects
		// API-key auth (GEMINI_CLI_SYSTEM_SETTINGS_PATH) with a file in the
		// user's state directory, which Gemini CLI reads only when root
		// owns every directory above it (geminiHome).
		cmd := l.Command(append(xEnv(t.TempDir(), members), geminiHome(t)...), bin, "run", "--health-url", "", "--config", cfg, "--pool", "px", "--",
			gemini, "-m", "gemini-2.5-flash", "-p", "say ok")
		cmd.Dir = cwd
		r := agentlab.Run(t, cmd, 180*time.Second)
		t.Logf("gemini -p on a Chat-only pool: %v (member calls: %d failed, %d served)\nstderr: %s", r.Elapsed,
			len(agentlab.ReadJSONL(t, logs["g1"])), len(agentlab.ReadJSONL(t, logs["g2"])), r.Stderr)
		if r.Status != 0 || !strings.Contains(r.Stdout, "ok") {
			t.Fatalf("status %d stdout %q\nstderr: %s\nmember 2: %s", r.Status, r.Stdout, r.Stderr, agentSummary(agentlab.ReadJSONL(t, logs["g2"])))
		}
		served := modelCalls(agentlab.ReadJSONL(t, logs["g2"]), 200)
		if len(served) == 0 || len(modelCalls(agentlab.ReadJSONL(t, logs["g1"]), 529)) == 0 {
			t.Fatalf("no failover: member 2 served %d calls", len(served))
		}
		for _, e := range served {
			if e["path"] != "/v1/chat/completions" {
				t.Fatalf("a Chat member was sent %v", e["path"])
			}
		}
	})
}
