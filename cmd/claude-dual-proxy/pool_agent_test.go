//go:build agents

// Real Claude Code through the launcher's model pool (SPEC
// POOL-7, POOL-8, POOL-20): claude-dual-proxy --pool points the real
// `claude -p` at /pool/P on its own listener; the pool's two members are
// mock channels (internal/testbed/mockllm's command) inside the test's
// network namespace, the first answering 529 (overloaded).
//
//	go test -race -tags agents -count=1 -run PoolAgent ./cmd/claude-dual-proxy/
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"github.com/dual-proxy/dual-proxy/internal/testbed/agentlab"
	"github.com/dual-proxy/dual-proxy/internal/testbed/mockllm"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Channel keys (POOL-15: from api_key_env). The mocks log the first 12
// characters of a credential, which tell the two keys and the launch
// token (dpx-…) apart.
const (
	member1Key = "sk-m1-key-0123456789"
	member2Key = "sk-m2-key-0123456789"
)

// poolStatus is the part of GET /pool/status (POOL-13) the test reads.
type poolStatus struct {
	Pools []struct {
		ID      string `json:"id"`
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

// sessionHash is the short session form of POOL-13b as pool/balance/identity.go
// computes it (12 hex digits of SHA-256 over a fixed prefix and the id).
func sessionHash(id string) string {
	sum := sha256.Sum256([]byte("dual-proxy-session\x00" + id))
	return hex.EncodeToString(sum[:6])
}

// stickyScript runs inside one launch (pool state is per launch, POOL-16):
// two claude calls of one session, then the launcher's own /pool/status
// (its port is the one in HTTP_PROXY, ENV-1).
const stickyScript = `set -u
port=${HTTP_PROXY##*:}
"$AGENT" -p "say ok"; echo "call1 rc=$?"
"$AGENT" -p --continue "again"; echo "call2 rc=$?"
curl --noproxy '*' -sS -f -o "$STATUS_FILE" "http://127.0.0.1:$port/pool/status"; echo "status rc=$?"
`

func TestPoolAgent(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // registered first: runs after the servers are stopped
	claude := claudePath(t)
	bin := buildLauncher(t)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("the pool agents test needs curl (.ci/run installs it)")
	}
	mock := agentlab.BuildTools(t).MockLLM
	l := agentlab.New(t)

	// Every /v1/messages to member 1 is 529: the pool fails over to
	// member 2 before the commit point, claude sees one clean stream.
	t.Run("POOL-7/claude-p-first-member-overloaded-fails-over", func(t *testing.T) {
		ch := startChannels(t, l, mock, "18081", "18082", mockllm.FailEvery)
		h := newHome(t)
		cmd := h.command(l, bin, "--health-url", "", "--log-file", h.logFile, "--log-level", "debug", "--log-format", "json",
			"--config", ch.Config, "--pool", "p", "--command", claude, "--", "-p", "say ok")
		cmd.Env = append(cmd.Env, poolEnv()...)
		r := agentlab.Run(t, cmd, 90*time.Second)
		t.Logf("claude -p through the pool with failover: %v", r.Elapsed)
		checkOK(t, r, h)
		m1, m2 := agentlab.ReadJSONL(t, ch.Log1), agentlab.ReadJSONL(t, ch.Log2)
		sid := checkChannelCalls(t, "member 1", m1, 1, 529, member1Key, "")
		checkChannelCalls(t, "member 2", m2, 1, 200, member2Key, sid)
		checkPoolLog(t, h.logFile, sid, 1)
	})

	// Member 1 fails only its first call and is cooling for 1 ms: for the
	// --continue call it is healthy and has fewer sessions than member 2,
	// so only the sticky binding (moved to member 2 by the failover,
	// POOL-8) keeps the session there.
	t.Run("POOL-8/claude-continue-stays-on-member-that-took-over", func(t *testing.T) {
		ch := startChannels(t, l, mock, "18083", "18084", 1)
		h := newHome(t)
		statusFile := filepath.Join(t.TempDir(), "status.json")
		cmd := h.command(l, bin, "--health-url", "", "--log-file", h.logFile, "--log-level", "debug", "--log-format", "json",
			"--config", ch.Config, "--pool", "p", "--command", "sh", "--", "-c", stickyScript)
		cmd.Env = append(append(cmd.Env, poolEnv()...), "AGENT="+claude, "STATUS_FILE="+statusFile)
		r := agentlab.Run(t, cmd, 120*time.Second)
		t.Logf("two claude -p calls through the pool: %v", r.Elapsed)
		if want := "ok\ncall1 rc=0\nok\ncall2 rc=0\nstatus rc=0\n"; r.Status != 0 || r.Stdout != want {
			log, _ := os.ReadFile(h.logFile)
			t.Fatalf("status %d stdout %q, want 0 and %q\nstderr: %s\nlauncher log:\n%s", r.Status, r.Stdout, want, r.Stderr, log)
		}
		m1, m2 := agentlab.ReadJSONL(t, ch.Log1), agentlab.ReadJSONL(t, ch.Log2)
		sid := checkChannelCalls(t, "member 1", m1, 1, 529, member1Key, "")
		checkChannelCalls(t, "member 2", m2, 2, 200, member2Key, sid)
		if a, b := len(messages(m2[0])), len(messages(m2[1])); b <= a {
			t.Fatalf("--continue sent %d messages after %d: not the same conversation", b, a)
		}
		checkPoolLog(t, h.logFile, sid, 2)

		b, err := os.ReadFile(statusFile)
		if err != nil {
			t.Fatal(err)
		}
		var st poolStatus
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatalf("/pool/status: %v\n%s", err, b)
		}
		if strings.Contains(string(b), sid) {
			t.Fatalf("/pool/status shows the raw session id (POOL-13b):\n%s", b)
		}
		checkStatus(t, st, sessionHash(sid), b)
	})
}

// startChannels starts the pair of mock Anthropic channels of pool "p":
// member 1 answers 529 (every call when failFirst is mockllm.FailEvery,
// else its first failFirst calls); server cooldown 1 ms, so only
// stickiness can keep a session off a member that failed once.
func startChannels(t *testing.T, l *agentlab.Lab, mock, port1, port2 string, failFirst int) agentlab.PoolChannels {
	return l.StartPoolChannels(t, mock, agentlab.ChannelSpec{
		API: "anthropic", Speaks: mockllm.Anthropic, Pool: "p", Members: [2]string{"m1", "m2"}, KeyEnvs: [2]string{"DP_M1_KEY", "DP_M2_KEY"},
		Ports: [2]string{port1, port2}, FailStatus: 529, FailFirst: failFirst, CooldownMillis: "server_ms: 1",
	})
}

// poolEnv is added to a home's environment for pool launches.
func poolEnv() []string { return []string{"DP_M1_KEY=" + member1Key, "DP_M2_KEY=" + member2Key} }

// checkChannelCalls asserts a channel saw exactly n POST /v1/messages,
// each answered with status, carrying the channel's own key (never the
// launch token or the user's ANTHROPIC_API_KEY, POOL-2/POOL-20) and one
// Claude Code session id (sid, when given). It returns that id.
func checkChannelCalls(t *testing.T, name string, got []map[string]any, n int, status float64, key, sid string) string {
	t.Helper()
	if len(got) != n {
		t.Fatalf("%s saw %d requests, want %d:\n%s", name, len(got), n, summary(got))
	}
	for _, e := range got {
		if e["method"] != "POST" || !strings.HasPrefix(str(e["path"]), "/v1/messages") || e["mock_status"] != status {
			t.Fatalf("%s saw %s, want POST /v1/messages answered %v", name, summary(got), status)
		}
		if got := header(e, "x-api-key"); !strings.HasPrefix(got, key[:12]) {
			t.Fatalf("%s got x-api-key %q, want the channel's key %s…", name, got, key[:12])
		}
		if a := header(e, "authorization"); a != "" {
			t.Fatalf("%s got an Authorization header %q: the launch token was forwarded", name, a)
		}
		id := header(e, "x-claude-code-session-id")
		if id == "" || (sid != "" && id != sid) {
			t.Fatalf("%s got session id %q, want %q", name, id, sid)
		}
		sid = id
	}
	return sid
}

// checkPoolLog asserts the launcher's log (OPS-1) has member 1's failure
// (class server, 529) and calls served by m2, all under the session's
// short hash, and never the raw session id or a channel key.
func checkPoolLog(t *testing.T, logFile, sid string, served int) {
	t.Helper()
	raw, _ := os.ReadFile(logFile)
	for _, secret := range []string{sid, member1Key, member2Key} {
		if strings.Contains(string(raw), secret) {
			t.Fatalf("launcher log holds %q:\n%s", secret, raw)
		}
	}
	recs := agentlab.ReadJSONL(t, logFile)
	hash := sessionHash(sid)
	if !hasRecord(recs, func(r map[string]any) bool {
		return r["msg"] == "pool member failed" && r["member"] == "m1" && r["class"] == "server" && r["status"] == float64(529) && r["session"] == hash
	}) {
		t.Fatalf("launcher log has no `pool member failed` of m1 (server, 529) for session %s:\n%s", hash, raw)
	}
	n := 0
	for _, r := range recs {
		if r["msg"] == "pool call done" {
			if r["member"] != "m2" || r["session"] != hash {
				t.Fatalf("pool call done by %v for session %v, want m2 and %s:\n%s", r["member"], r["session"], hash, raw)
			}
			n++
		}
	}
	if n != served {
		t.Fatalf("launcher log has %d `pool call done` records, want %d:\n%s", n, served, raw)
	}
}

// checkStatus asserts the launcher's /pool/status after the two calls:
// the session is bound to m2 (POOL-8), m1 is ready again with one
// failure, and the recent calls are the failover and the sticky call.
func checkStatus(t *testing.T, st poolStatus, hash string, raw []byte) {
	t.Helper()
	if len(st.Pools) != 1 || st.Pools[0].ID != "p" || len(st.Pools[0].Members) != 2 {
		t.Fatalf("status pools: %s", raw)
	}
	m1, m2 := st.Pools[0].Members[0], st.Pools[0].Members[1]
	if m1.ID != "m1" || m1.State != "ready" || m1.Failures != 1 || m1.Successes != 0 || m1.BoundSessions != 0 {
		t.Fatalf("member m1 %+v, want ready with 1 failure, no success, no session:\n%s", m1, raw)
	}
	if m2.ID != "m2" || m2.Failures != 0 || m2.Successes != 2 || m2.BoundSessions != 1 {
		t.Fatalf("member m2 %+v, want 2 successes and the session:\n%s", m2, raw)
	}
	if len(st.Sessions) != 1 || st.Sessions[0].Session != hash || st.Sessions[0].Pool != "p" || len(st.Sessions[0].Bindings) != 1 {
		t.Fatalf("status sessions, want one session %s in p:\n%s", hash, raw)
	}
	for model, member := range st.Sessions[0].Bindings {
		if member != "m2" {
			t.Fatalf("session %s bound to %s for %s, want m2:\n%s", hash, member, model, raw)
		}
	}
	if len(st.Recent) != 2 {
		t.Fatalf("status has %d recent calls, want 2:\n%s", len(st.Recent), raw)
	}
	for i, want := range []int{1, 0} {
		c := st.Recent[i]
		if c.Member != "m2" || c.Session != hash || c.Failovers != want || c.Status != 200 {
			t.Fatalf("recent call %d %+v, want m2, session %s, %d failovers, 200:\n%s", i, c, hash, want, raw)
		}
	}
}

// header returns a logged request header, any case.
func header(e map[string]any, name string) string {
	h, _ := e["headers"].(map[string]any)
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return str(v)
		}
	}
	return ""
}

// messages returns a logged request's body messages.
func messages(e map[string]any) []any {
	b, _ := e["body"].(map[string]any)
	m, _ := b["messages"].([]any)
	return m
}

// summary is one line per logged request.
func summary(got []map[string]any) string {
	var b strings.Builder
	for _, e := range got {
		b.WriteString(str(e["method"]) + " " + str(e["path"]) + " status " + jsonString(e["mock_status"]) + "\n")
	}
	return b.String()
}

func jsonString(v any) string { b, _ := json.Marshal(v); return string(b) }
