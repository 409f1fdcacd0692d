//go:build agents

// Real agents with thinking on across a failover (SPEC POOL-18, POOL-8):
// Claude Code and OpenCode each hold one session of three turns on a pool
// of two Anthropic members, each a strict mock channel that signs its own
// thinking blocks and refuses any other signature with the provider's 400
// (mockllm -strict -thinking). The session starts on member A; from the
// second turn on A answers 529, so that turn, which carries A's signed
// thinking in its history, fails over to B, and the third stays on B by
// its binding although A is hot again. Every turn must print the answer
// and exit 0: B must get the history without A's signatures.
//
//	go test -race -tags agents -count=1 -run ThinkingFailoverAgents ./cmd/dual-proxy/
//
// Needs root (ip netns), iproute2, curl and DUAL_PROXY_AGENTS_DIR: an npm
// prefix holding @anthropic-ai/claude-code and opencode-ai (.ci/run
// prepares one).
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/agentlab"
)

// thinkingAgent is one agent's session: the arguments of its three turns
// (the second and third continue the first's session), the model calls its
// first turn makes (OpenCode adds a title call), and its environment
// beside xEnv.
type thinkingAgent struct {
	name       string
	turns      [3][]string
	firstCalls int
	env        func(*testing.T) []string
}

// openCodeThinking: OpenCode thinks on Anthropic models when asked for a
// reasoning variant; its own catalogue's model, since a pool model id has
// no reasoning capability there.
var openCodeThinking = []string{"-m", "anthropic/claude-sonnet-4-5", "--variant", "high"}

var thinkingAgents = []thinkingAgent{
	// Claude Code asks for adaptive thinking by default.
	{name: "claude", firstCalls: 1, env: quietClaude, turns: [3][]string{
		{"-p", "say ok"}, {"-p", "--continue", "again"}, {"-p", "--continue", "once more"}}},
	{name: "opencode", firstCalls: 2, env: quietOpenCode, turns: [3][]string{
		append([]string{"run"}, append(openCodeThinking, "say ok")...),
		append([]string{"run", "-c"}, append(openCodeThinking, "again")...),
		append([]string{"run", "-c"}, append(openCodeThinking, "once more")...)}},
}

// thinkingWrapper is an executable named after the agent, so the launcher
// gives it the agent's preset (Claude Code's --settings layer, OpenCode's
// inline config); it runs the real agent once per turn inside this one
// launch (pool state is per launch, POOL-16), with the preset's arguments
// first, then fetches the launcher's /pool/status (its port is the one in
// HTTP_PROXY, ENV-1).
func thinkingWrapper(a thinkingAgent) string {
	var b strings.Builder
	b.WriteString("#!/bin/sh\nset -u\n")
	for i, args := range a.turns {
		b.WriteString(`"$REAL_AGENT" "$@"`)
		for _, arg := range args {
			b.WriteString(" '" + arg + "'")
		}
		fmt.Fprintf(&b, " </dev/null; echo \"turn%d rc=$?\"\n", i+1)
	}
	b.WriteString("port=${HTTP_PROXY##*:}\n")
	b.WriteString(`curl --noproxy '*' -sS -f -o "$STATUS_FILE" "http://127.0.0.1:$port/pool/status"; echo "status rc=$?"` + "\n")
	return b.String()
}

func TestThinkingFailoverAgents(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("the thinking agents test needs curl (.ci/run installs it)")
	}
	mock := agentlab.BuildTools(t).MockLLM
	l := agentlab.New(t)
	t.Run("POOL-18/thinking-sessions", func(t *testing.T) {
		for i, a := range thinkingAgents {
			t.Run("POOL-18/"+a.name+"-thinking-session-fails-over-mid-session", func(t *testing.T) {
				t.Parallel()
				testThinkingFailover(t, l, mock, i, a)
			})
		}
	})
}

// testThinkingFailover runs agent a (case i, which picks its ports) for
// three turns on a two-member pool whose first member fails from the
// agent's second turn on, and checks what each member received.
func testThinkingFailover(t *testing.T, l *agentlab.Lab, mock string, i int, a thinkingAgent) {
	exe := agentBin(t, a.name)
	dir := t.TempDir()
	ports := [2]string{strconv.Itoa(18251 + 2*i), strconv.Itoa(18252 + 2*i)}
	logA, logB := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	l.StartServer(t, "mockllm listening", mock, "-addr", "127.0.0.1:"+ports[0], "-api", "anthropic", "-log", logA,
		"-strict", "-thinking", "-fail-from", strconv.Itoa(a.firstCalls+1), "-fail-status", "529")
	l.StartServer(t, "mockllm listening", mock, "-addr", "127.0.0.1:"+ports[1], "-api", "anthropic", "-log", logB,
		"-strict", "-thinking")
	members := []xMember{{id: "ta", port: ports[0]}, {id: "tb", port: ports[1]}}
	// Sticky (the default strategy): the session starts on ta, the first
	// member; a 1 ms server cooldown leaves only the binding to keep the
	// third turn off ta.
	cfg := filepath.Join(dir, "config.yaml")
	y := "channels:\n"
	for _, m := range members {
		y += "  " + m.id + ": {api: anthropic, base_url: \"http://127.0.0.1:" + m.port + "\", api_key_env: DP_" + strings.ToUpper(m.id) + "_KEY}\n"
	}
	y += "pools:\n  px:\n    members: [ta, tb]\n    cooldown: {server_ms: 1}\n"
	if err := os.WriteFile(cfg, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	wrapDir := t.TempDir()
	wrapper := filepath.Join(wrapDir, a.name)
	if err := os.WriteFile(wrapper, []byte(thinkingWrapper(a)), 0o755); err != nil {
		t.Fatal(err)
	}
	home, cwd := t.TempDir(), t.TempDir()
	statusFile := filepath.Join(dir, "status.json")
	env := append(xEnv(home, members), "REAL_AGENT="+exe, "STATUS_FILE="+statusFile)
	if a.env != nil {
		env = append(env, a.env(t)...)
	}
	logFile := filepath.Join(dir, "launcher.log")
	cmd := l.Command(env, bin, "run", "--health-url", "", "--log-file", logFile, "--log-level", "debug", "--log-format", "json",
		"--config", cfg, "--pool", "px", "--", wrapper)
	cmd.Dir = cwd
	r := agentlab.Run(t, cmd, 400*time.Second)
	t.Logf("%s: three thinking turns across a failover in %v", a.name, r.Elapsed)
	atA, atB := agentlab.ReadJSONL(t, logA), agentlab.ReadJSONL(t, logB)
	// failure fails the subtest t that calls it, with what every party saw.
	failure := func(t *testing.T, format string, args ...any) {
		t.Helper()
		t.Fatalf(format+"\nstatus %d\nstdout:\n%s\nstderr:\n%s\nmember A:\n%s\nmember B:\n%s\nlauncher log:\n%s", append(args,
			r.Status, r.Stdout, r.Stderr, agentSummary(atA), agentSummary(atB), readFile(logFile))...)
	}

	t.Run("POOL-18/"+a.name+"-every-turn-answers-without-error", func(t *testing.T) {
		checkTurns(t, r, failure)
	})
	t.Run("POOL-18/"+a.name+"-member-b-gets-history-without-member-a-signatures", func(t *testing.T) {
		// A: the first turn's calls answered, then the second turn's call
		// failed 529, and nothing more.
		if len(atA) != a.firstCalls+1 || len(modelCalls(atA, 200)) != a.firstCalls || len(modelCalls(atA, 529)) != 1 {
			failure(t, "member A saw %d calls, want %d answered and one 529", len(atA), a.firstCalls)
		}
		// Thinking was on: else the test proves nothing.
		for _, e := range atA[:a.firstCalls] {
			if !asksThinking(e) {
				failure(t, "the first turn's call to member A asks for no thinking: %v", body(e)["thinking"])
			}
		}
		failed := atA[a.firstCalls]
		sigsA := thinkingSignatures(failed)
		if len(sigsA) == 0 {
			failure(t, "the second turn's call to member A holds no signed thinking block from the first turn: %s", jsonString(body(failed)["messages"]))
		}
		// B: the second and third turns, both 200 (a strict member answers
		// 400 to a signature it did not mint).
		if len(atB) != 2 || len(modelCalls(atB, 200)) != 2 {
			failure(t, "member B saw %d calls, want 2 answered (none refused)", len(atB))
		}
		if len(messages(atB[0])) != len(messages(failed)) || !asksThinking(atB[0]) {
			failure(t, "member B got %d messages (thinking %v) for the call member A got %d of", len(messages(atB[0])), body(atB[0])["thinking"], len(messages(failed)))
		}
		for _, e := range atB {
			for s := range thinkingSignatures(e) {
				if sigsA[s] {
					failure(t, "member B was sent member A's thinking signature %.16s…", s)
				}
			}
		}
		// B's own reasoning of the second turn went back to it, accepted.
		if len(thinkingSignatures(atB[1])) == 0 {
			failure(t, "the third turn's call holds no thinking block of member B: %s", jsonString(body(atB[1])["messages"]))
		}
	})
	t.Run("POOL-8/"+a.name+"-binding-moves-once-to-member-b-and-stays", func(t *testing.T) {
		checkOneMove(t, logFile, statusFile, modelOf(failedCall(atA, a.firstCalls)), failure)
	})
}

// checkTurns asserts the launch and every turn exited 0 and each turn
// printed the mock's answer with no error shown.
func checkTurns(t *testing.T, r agentlab.Result, failure func(*testing.T, string, ...any)) {
	t.Helper()
	if r.Status != 0 {
		failure(t, "the launch exited %d", r.Status)
	}
	rest := r.Stdout
	for turn := 1; turn <= 3; turn++ {
		marker := fmt.Sprintf("turn%d rc=", turn)
		before, after, ok := strings.Cut(rest, marker)
		if !ok || !strings.HasPrefix(after, "0\n") {
			failure(t, "turn %d did not exit 0", turn)
		}
		if !hasLine(before, "ok") || strings.Contains(strings.ToLower(before), "error") {
			failure(t, "turn %d printed %q, want the answer \"ok\" and no error", turn, before)
		}
		rest = after[2:]
	}
	if !strings.Contains(rest, "status rc=0") {
		failure(t, "no /pool/status")
	}
	if strings.Contains(strings.ToLower(r.Stderr), "error") || strings.Contains(r.Stderr, "dual-proxy: warning") {
		failure(t, "the agent or the launcher showed an error or a warning")
	}
}

// checkOneMove asserts, from the launcher's log and /pool/status, that
// member A failed once (server, 529) and no call was refused, and that the
// session's calls of model went A, then B from the failover on: one move,
// and B holds the binding.
func checkOneMove(t *testing.T, logFile, statusFile, model string, failure func(*testing.T, string, ...any)) {
	t.Helper()
	var fails []map[string]any
	for _, rec := range agentlab.ReadJSONL(t, logFile) {
		if rec["msg"] == "pool member failed" {
			fails = append(fails, rec)
		}
	}
	if len(fails) != 1 || fails[0]["member"] != "ta" || fails[0]["class"] != "server" || fails[0]["status"] != float64(529) {
		failure(t, "pool member failures %v, want one: ta, server, 529", fails)
	}
	raw, err := os.ReadFile(statusFile)
	if err != nil {
		failure(t, "no /pool/status: %v", err)
	}
	var st poolStatusDoc
	if err := json.Unmarshal(raw, &st); err != nil {
		failure(t, "/pool/status: %v\n%s", err, raw)
	}
	if len(st.Sessions) != 1 || st.Sessions[0].Bindings[model] != "tb" {
		failure(t, "/pool/status sessions, want one bound to tb for %s:\n%s", model, raw)
	}
	var members []string
	failovers := 0
	for _, c := range st.Recent {
		if c.Session != st.Sessions[0].Session || c.Status != 200 {
			failure(t, "recent call %+v, want the session's, 200:\n%s", c, raw)
		}
		failovers += c.Failovers
		if c.Model == model {
			members = append(members, c.Member)
		}
	}
	moves := 0
	for i := 1; i < len(members); i++ {
		if members[i] != members[i-1] {
			moves++
		}
	}
	if failovers != 1 || moves != 1 || len(members) != 3 || members[0] != "ta" || members[2] != "tb" {
		failure(t, "the session's calls of %s went to %v with %d failovers, want ta, tb, tb and one failover:\n%s", model, members, failovers, raw)
	}
}

// poolStatusDoc is the part of GET /pool/status (POOL-13) the test reads.
type poolStatusDoc struct {
	Sessions []struct {
		Session  string            `json:"session"`
		Bindings map[string]string `json:"bindings"`
	} `json:"sessions"`
	Recent []struct {
		Session   string `json:"session"`
		Model     string `json:"model"`
		Member    string `json:"member"`
		Failovers int    `json:"failovers"`
		Status    int    `json:"status"`
	} `json:"recent"`
}

// failedCall is member A's failed call: the one after the first turn's.
func failedCall(atA []map[string]any, firstCalls int) map[string]any {
	if len(atA) <= firstCalls {
		return nil
	}
	return atA[firstCalls]
}

func body(e map[string]any) map[string]any { b, _ := e["body"].(map[string]any); return b }

func messages(e map[string]any) []any { m, _ := body(e)["messages"].([]any); return m }

func modelOf(e map[string]any) string { m, _ := body(e)["model"].(string); return m }

// asksThinking tells whether a logged Anthropic call asks for thinking.
func asksThinking(e map[string]any) bool {
	th, ok := body(e)["thinking"].(map[string]any)
	return ok && th["type"] != "disabled"
}

// thinkingSignatures are the signatures of the thinking blocks (and the
// data of the redacted ones) in a logged call's messages.
func thinkingSignatures(e map[string]any) map[string]bool {
	out := map[string]bool{}
	for _, m := range messages(e) {
		content, _ := m.(map[string]any)["content"].([]any)
		for _, c := range content {
			b, _ := c.(map[string]any)
			switch b["type"] {
			case "thinking":
				if s, _ := b["signature"].(string); s != "" {
					out[s] = true
				}
			case "redacted_thinking":
				if s, _ := b["data"].(string); s != "" {
					out[s] = true
				}
			}
		}
	}
	return out
}

// hasLine tells whether text has a line that is want once trimmed.
func hasLine(text, want string) bool {
	for _, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) == want {
			return true
		}
	}
	return false
}

func jsonString(v any) string { b, _ := json.Marshal(v); return string(b) }
