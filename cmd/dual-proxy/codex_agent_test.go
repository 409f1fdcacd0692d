//go:build agents

// Real Codex CLI through `dual-proxy run --pool` (SPEC
// POOL-20 Codex preset, POOL-7, POOL-8): the launcher adds its `-c`
// overrides for the provider dual-pool to `codex`, whose HOME has no
// config.toml; the pool's two members are mock OpenAI Responses channels
// (internal/testbed/mockllm's command) inside a loopback-only network
// namespace (internal/testbed/agentlab), the first answering 429.
//
//	go test -race -tags agents -count=1 -run CodexAgent ./cmd/dual-proxy/
//
// Needs root (ip netns), iproute2, bash, curl, and either
// DUAL_PROXY_AGENTS_DIR (an npm prefix holding @openai/codex; .ci/run
// prepares one) or npm, with which the test installs it into a temporary
// directory.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"github.com/dual-proxy/dual-proxy/internal/testbed/agentlab"
	"github.com/dual-proxy/dual-proxy/internal/testbed/mockllm"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Channel keys (POOL-15, from api_key_env). The mocks log the first 12
// characters of a credential: "Bearer sk-o1" / "Bearer sk-o2" tell them
// apart from the launch token (dpx-…) and the user's own key.
const (
	codexKey1    = "sk-o1-key-0123456789"
	codexKey2    = "sk-o2-key-0123456789"
	codexUserKey = "sk-user-own-0123456789"
)

// codexWrapper is an executable named codex, so the launcher gives it the
// Codex preset (POOL-20 keys on the command's name). It records the
// preset, then runs the real codex twice with it inside this one launch
// (pool state is per launch, POOL-16): `exec` as the launcher was asked,
// then `exec resume --last` of that session; last the launcher's own
// /pool/status (its port is the one in HTTP_PROXY, ENV-1).
const codexWrapper = `#!/bin/bash
set -u
pre=()
while [ "${1-}" = "-c" ]; do pre+=("$1" "$2"); shift 2; done
printf '%s\n' "${pre[@]}" >"$PRESET_FILE"
"$REAL_CODEX" "${pre[@]}" "$@" </dev/null; echo "call1 rc=$?"
"$REAL_CODEX" "${pre[@]}" exec --skip-git-repo-check resume --last "again" </dev/null; echo "call2 rc=$?"
port=${HTTP_PROXY##*:}
curl --noproxy '*' -sS -f -o "$STATUS_FILE" "http://127.0.0.1:$port/pool/status"; echo "status rc=$?"
`

// codexPreset is what the launcher must put before codex's own arguments.
var codexPreset = regexp.MustCompile(`^-c
model_provider="dual-pool"
-c
model_providers\.dual-pool\.name="dual-proxy pool po"
-c
model_providers\.dual-pool\.base_url="http://127\.0\.0\.1:\d+/pool/po/v1"
-c
model_providers\.dual-pool\.env_key="OPENAI_API_KEY"
-c
model_providers\.dual-pool\.wire_api="responses"
$`)

func TestCodexAgent(t *testing.T) {
	codex := codexPath(t)
	for _, tool := range []string{"curl", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the Codex agents test needs %s (.ci/run installs it)", tool)
		}
	}
	mock := agentlab.BuildTools(t).MockLLM
	l := agentlab.New(t)

	// Member 1 answers every /v1/responses with 429: the pool fails over
	// before the commit point and codex prints member 2's reply.
	t.Run("POOL-20/codex-exec-preset-first-member-429-fails-over", func(t *testing.T) {
		ch := startCodexChannels(t, l, mock, "18091", "18092", mockllm.FailEvery)
		h := newCodexHome(t)
		r := agentlab.Run(t, h.command(l, nil, bin, "run", "--health-url", "", "--log-file", h.logFile, "--log-level", "debug", "--log-format", "json",
			"--config", ch.Config, "--pool", "po", "--", codex, "exec", "--skip-git-repo-check", "say ok"), 120*time.Second)
		t.Logf("codex exec through the pool with failover: %v", r.Elapsed)
		if r.Status != 0 || r.Stdout != "ok\n" {
			t.Fatalf("status %d stdout %q, want 0 and \"ok\"\nstderr: %s\nlauncher log:\n%s", r.Status, r.Stdout, r.Stderr, readFile(h.logFile))
		}
		sid := checkCodexCalls(t, "member 1", agentlab.ReadJSONL(t, ch.Log1), 1, 429, codexKey1, "")
		checkCodexCalls(t, "member 2", agentlab.ReadJSONL(t, ch.Log2), 1, 200, codexKey2, sid)
		checkCodexPoolLog(t, h.logFile, sid, 1)
	})

	// Member 1 fails only its first call and cools for 1 ms: for the
	// resumed session it is healthy and has fewer sessions than member 2,
	// so only the sticky binding (moved by the failover, POOL-8) keeps the
	// session on member 2.
	t.Run("POOL-8/codex-resume-stays-on-member-that-took-over", func(t *testing.T) {
		ch := startCodexChannels(t, l, mock, "18093", "18094", 1)
		h := newCodexHome(t)
		wrapDir := t.TempDir()
		wrapper := filepath.Join(wrapDir, "codex")
		if err := os.WriteFile(wrapper, []byte(codexWrapper), 0o755); err != nil {
			t.Fatal(err)
		}
		presetFile, statusFile := filepath.Join(wrapDir, "preset"), filepath.Join(wrapDir, "status.json")
		r := agentlab.Run(t, h.command(l, []string{"REAL_CODEX=" + codex, "PRESET_FILE=" + presetFile, "STATUS_FILE=" + statusFile},
			bin, "run", "--health-url", "", "--log-file", h.logFile, "--log-level", "debug", "--log-format", "json",
			"--config", ch.Config, "--pool", "po", "--", wrapper, "exec", "--skip-git-repo-check", "say ok"), 180*time.Second)
		t.Logf("codex exec + codex exec resume through the pool: %v", r.Elapsed)
		if want := "ok\ncall1 rc=0\nok\ncall2 rc=0\nstatus rc=0\n"; r.Status != 0 || r.Stdout != want {
			t.Fatalf("status %d stdout %q, want 0 and %q\nstderr: %s\nlauncher log:\n%s", r.Status, r.Stdout, want, r.Stderr, readFile(h.logFile))
		}
		if p := readFile(presetFile); !codexPreset.MatchString(p) {
			t.Fatalf("the launcher's Codex preset:\n%s\nwant %s", p, codexPreset)
		}
		m1, m2 := agentlab.ReadJSONL(t, ch.Log1), agentlab.ReadJSONL(t, ch.Log2)
		sid := checkCodexCalls(t, "member 1", m1, 1, 429, codexKey1, "")
		checkCodexCalls(t, "member 2", m2, 2, 200, codexKey2, sid)
		if a, b := len(codexInput(m2[0])), len(codexInput(m2[1])); b <= a {
			t.Fatalf("resume sent %d input items after %d: not the same conversation", b, a)
		}
		checkCodexPoolLog(t, h.logFile, sid, 2)
		raw := []byte(readFile(statusFile))
		var st codexPoolStatus
		if err := json.Unmarshal(raw, &st); err != nil {
			t.Fatalf("/pool/status: %v\n%s", err, raw)
		}
		if strings.Contains(string(raw), sid) {
			t.Fatalf("/pool/status shows the raw session id (POOL-13b):\n%s", raw)
		}
		checkCodexStatus(t, st, agentSessionHash(sid), raw)
	})
}

// startCodexChannels starts the pair of mock OpenAI channels of pool
// "po": member 1 answers 429 (every call when failFirst is
// mockllm.FailEvery, else its first failFirst calls); cooldowns of 1 ms, so
// only stickiness can keep a session off a member that failed once.
func startCodexChannels(t *testing.T, l *agentlab.Lab, mock, port1, port2 string, failFirst int) agentlab.PoolChannels {
	return l.StartPoolChannels(t, mock, agentlab.ChannelSpec{
		API: "openai", Speaks: mockllm.Responses, BasePath: "/v1", Pool: "po", Members: [2]string{"o1", "o2"}, KeyEnvs: [2]string{"DP_O1_KEY", "DP_O2_KEY"},
		Ports: [2]string{port1, port2}, FailStatus: 429, FailFirst: failFirst, CooldownMillis: "rate_limit_ms: 1, server_ms: 1",
	})
}

// codexHome is a fresh HOME (no ~/.codex/config.toml: the launcher's
// preset alone must point codex at the pool) and working directory.
type codexHome struct {
	dir, cwd, logFile string
}

func newCodexHome(t *testing.T) *codexHome {
	t.Helper()
	return &codexHome{dir: t.TempDir(), cwd: t.TempDir(), logFile: filepath.Join(t.TempDir(), "launcher.log")}
}

// command runs argv inside l in h's working directory with h's
// environment (the user's own OPENAI_API_KEY, which pool mode replaces;
// the channel keys for the launcher) plus extra.
func (h *codexHome) command(l *agentlab.Lab, extra []string, argv ...string) *exec.Cmd {
	env := append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + h.dir,
		"LANG=C.UTF-8",
		"OPENAI_API_KEY=" + codexUserKey,
		"DP_O1_KEY=" + codexKey1,
		"DP_O2_KEY=" + codexKey2,
	}, extra...)
	cmd := l.Command(env, argv...)
	cmd.Dir = h.cwd
	return cmd
}

// checkCodexCalls asserts a channel saw exactly n POST /v1/responses,
// each answered with status, carrying the channel's own key as Bearer
// (never the launch token or the user's key, POOL-2/POOL-20) and one
// Codex session: the session-id header equal to the body's
// prompt_cache_key (and to sid, when given). It returns that id.
func checkCodexCalls(t *testing.T, name string, got []map[string]any, n int, status float64, key, sid string) string {
	t.Helper()
	if len(got) != n {
		t.Fatalf("%s saw %d requests, want %d:\n%s", name, len(got), n, agentSummary(got))
	}
	for _, e := range got {
		if e["method"] != "POST" || e["path"] != "/v1/responses" || e["query"] != "" || e["mock_status"] != status {
			t.Fatalf("%s saw %s, want POST /v1/responses answered %v", name, agentSummary(got), status)
		}
		if a := agentHeader(e, "authorization"); !strings.HasPrefix(a, "Bearer "+key[:5]) {
			t.Fatalf("%s got Authorization %q, want the channel's key Bearer %s…", name, a, key[:5])
		}
		if a := agentHeader(e, "x-api-key"); a != "" {
			t.Fatalf("%s got an x-api-key %q", name, a)
		}
		id := agentHeader(e, "session-id")
		body, _ := e["body"].(map[string]any)
		if id == "" || body["prompt_cache_key"] != id || (sid != "" && id != sid) {
			t.Fatalf("%s got session-id %q prompt_cache_key %v, want both %q", name, id, body["prompt_cache_key"], sid)
		}
		sid = id
	}
	return sid
}

// checkCodexPoolLog asserts the launcher's log (OPS-1) has member 1's
// failure (class rate_limit, 429) and the calls served by o2, all under
// the session's short hash, and never the raw session id or a key.
func checkCodexPoolLog(t *testing.T, logFile, sid string, served int) {
	t.Helper()
	raw := readFile(logFile)
	for _, secret := range []string{sid, codexKey1, codexKey2, codexUserKey} {
		if strings.Contains(raw, secret) {
			t.Fatalf("launcher log holds %q:\n%s", secret, raw)
		}
	}
	hash := agentSessionHash(sid)
	failed, done := 0, 0
	for _, r := range agentlab.ReadJSONL(t, logFile) {
		switch r["msg"] {
		case "pool member failed":
			if r["member"] != "o1" || r["class"] != "rate_limit" || r["status"] != float64(429) || r["session"] != hash {
				t.Fatalf("pool member failed: %v, want o1 rate_limit 429 for session %s:\n%s", r, hash, raw)
			}
			failed++
		case "pool call done":
			if r["member"] != "o2" || r["session"] != hash {
				t.Fatalf("pool call done by %v for session %v, want o2 and %s:\n%s", r["member"], r["session"], hash, raw)
			}
			done++
		}
	}
	if failed != 1 || done != served {
		t.Fatalf("launcher log has %d member failures and %d calls done, want 1 and %d:\n%s", failed, done, served, raw)
	}
}

// codexPoolStatus is the part of GET /pool/status (POOL-13) the test reads.
type codexPoolStatus struct {
	Pools []struct {
		ID      string `json:"id"`
		API     string `json:"api"`
		Members []struct {
			ID            string `json:"id"`
			State         string `json:"state"`
			Successes     int    `json:"successes"`
			Failures      int    `json:"failures"`
			BoundSessions int    `json:"bound_sessions"`
		} `json:"members"`
	} `json:"pools"`
	Sessions []struct {
		Session  string            `json:"session"`
		Pool     string            `json:"pool"`
		Bindings map[string]string `json:"bindings"`
	} `json:"sessions"`
	Recent []struct {
		Session   string `json:"session"`
		Member    string `json:"member"`
		Failovers int    `json:"failovers"`
		Status    int    `json:"status"`
	} `json:"recent"`
}

// checkCodexStatus asserts the launcher's /pool/status after the two
// calls: the session is bound to o2 (POOL-8), o1 is ready again with one
// failure, and the recent calls are the failover and the sticky call.
func checkCodexStatus(t *testing.T, st codexPoolStatus, hash string, raw []byte) {
	t.Helper()
	if len(st.Pools) != 1 || st.Pools[0].ID != "po" || st.Pools[0].API != "openai" || len(st.Pools[0].Members) != 2 {
		t.Fatalf("status pools: %s", raw)
	}
	o1, o2 := st.Pools[0].Members[0], st.Pools[0].Members[1]
	if o1.ID != "o1" || o1.State != "ready" || o1.Failures != 1 || o1.Successes != 0 || o1.BoundSessions != 0 {
		t.Fatalf("member o1 %+v, want ready with 1 failure, no success, no session:\n%s", o1, raw)
	}
	if o2.ID != "o2" || o2.Failures != 0 || o2.Successes != 2 || o2.BoundSessions != 1 {
		t.Fatalf("member o2 %+v, want 2 successes and the session:\n%s", o2, raw)
	}
	if len(st.Sessions) != 1 || st.Sessions[0].Session != hash || st.Sessions[0].Pool != "po" || len(st.Sessions[0].Bindings) != 1 {
		t.Fatalf("status sessions, want one session %s in po:\n%s", hash, raw)
	}
	for model, member := range st.Sessions[0].Bindings {
		if member != "o2" {
			t.Fatalf("session %s bound to %s for %s, want o2:\n%s", hash, member, model, raw)
		}
	}
	if len(st.Recent) != 2 {
		t.Fatalf("status has %d recent calls, want 2:\n%s", len(st.Recent), raw)
	}
	for i, want := range []int{1, 0} {
		c := st.Recent[i]
		if c.Member != "o2" || c.Session != hash || c.Failovers != want || c.Status != 200 {
			t.Fatalf("recent call %d %+v, want o2, session %s, %d failovers, 200:\n%s", i, c, hash, want, raw)
		}
	}
}

// agentSessionHash is the short session form of POOL-13b as
// pool/balance/identity.go computes it (12 hex digits of SHA-256 over a fixed
// prefix and the id).
func agentSessionHash(id string) string {
	sum := sha256.Sum256([]byte("dual-proxy-session\x00" + id))
	return hex.EncodeToString(sum[:6])
}

// agentHeader returns a logged request header, any case.
func agentHeader(e map[string]any, name string) string {
	h, _ := e["headers"].(map[string]any)
	for k, v := range h {
		if strings.EqualFold(k, name) {
			s, _ := v.(string)
			return s
		}
	}
	return ""
}

// codexInput returns a logged Responses request's input items.
func codexInput(e map[string]any) []any {
	b, _ := e["body"].(map[string]any)
	in, _ := b["input"].([]any)
	return in
}

// agentSummary is one line per logged request.
func agentSummary(got []map[string]any) string {
	var b strings.Builder
	for _, e := range got {
		st, _ := json.Marshal(e["mock_status"])
		b.WriteString(e["method"].(string) + " " + e["path"].(string) + " status " + string(st) + "\n")
	}
	return b.String()
}

// readFile returns a file's content, "" when it cannot be read (for
// failure messages and files the test checks for content).
func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// codexPath is the codex executable: from $DUAL_PROXY_AGENTS_DIR, else
// installed with npm into a temporary prefix (a native binary).
func codexPath(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("DUAL_PROXY_AGENTS_DIR")
	if dir == "" {
		if _, err := exec.LookPath("npm"); err != nil {
			t.Fatal("set DUAL_PROXY_AGENTS_DIR to an npm prefix holding @openai/codex, or install npm")
		}
		dir = t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		start := time.Now()
		out, err := exec.CommandContext(ctx, "npm", "install", "--prefix", dir, "--no-audit", "--no-fund", "@openai/codex").CombinedOutput()
		if err != nil {
			t.Fatalf("npm install @openai/codex: %v\n%s", err, out)
		}
		t.Logf("npm install @openai/codex: %v", time.Since(start))
	}
	p := filepath.Join(dir, "node_modules", ".bin", "codex")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("DUAL_PROXY_AGENTS_DIR: no codex executable (npm install --prefix DIR @openai/codex): %v", err)
	}
	return p
}
