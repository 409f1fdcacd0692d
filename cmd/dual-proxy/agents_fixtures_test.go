//go:build agents

// Each agent's real requests, recorded and compared (SPEC POOL-21): every
// agent CLI runs one short session that uses a tool (it reads a file, then
// answers) straight against a mock model endpoint of its own API, no
// launcher and no pool in between, inside a loopback-only network
// namespace. The mock logs each request byte for byte (mockllm -log-raw).
//
// By default the test compares the shape of what each agent sent (header
// names, anthropic-beta flags, body key paths, block and item types) with
// its recording in testdata/agents and fails naming what changed: the
// pool's translation and session rules were tested against the recorded
// requests, so a new agent version that sends something new is caught
// here before users meet it. With DUAL_PROXY_RECORD_AGENTS=1 it records
// instead: it replaces testdata/agents/AGENT/VERSION/ with the session's
// model calls (testdata/agents/README.md).
//
//	DUAL_PROXY_AGENTS_DIR=/tmp/dual-proxy-agents go test -race -tags agents -count=1 -run AgentRequestsAsRecorded ./cmd/dual-proxy/
//	DUAL_PROXY_AGENTS_DIR=/tmp/dual-proxy-agents DUAL_PROXY_RECORD_AGENTS=1 go test -tags agents -count=1 -run AgentRequestsAsRecorded ./cmd/dual-proxy/
//
// Needs root (ip netns), iproute2 and DUAL_PROXY_AGENTS_DIR, an npm prefix
// holding the agent CLIs (.ci/run installs them and sets it): unset, the
// test fails saying so; an agent not installed there is skipped, or fails
// under CI=true.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/agentlab"
	"github.com/dual-proxy/dual-proxy/internal/testbed/fixtures"
)

// recordAgentsEnv, set to 1, makes TestAgentRequestsAsRecorded record.
const recordAgentsEnv = "DUAL_PROXY_RECORD_AGENTS"

// secretWord is in the file every agent is asked to read: the call after
// the tool result carries it.
const secretWord = "the secret word is pelican-42"

// recordedAgent is one agent's recorded session: the API it speaks (the
// mock's -api), the tool the mock calls and its arguments (the file's
// absolute path substituted for FILE), the agent's arguments and
// environment beside PATH, HOME and LANG, pointing it at base (the mock's
// origin) as the launcher's pool presets would point it at a pool
// (docs/agents.md).
type recordedAgent struct {
	name, pkg, api string
	tool, toolArgs string
	thinking       bool
	args           []string
	env            func(t *testing.T, base, home string) []string
	// home, when set, makes the agent's HOME (else a temporary directory).
	home func(t *testing.T) string
}

// readPrompt asks for one tool call and an answer.
const readPrompt = "Read the file hello.txt in the current directory and tell me the secret word in it."

var recordedAgents = []recordedAgent{
	// Claude Code asks for adaptive thinking by default: the mock answers
	// with a signed thinking block, which the call after the tool result
	// carries back.
	{name: "claude", pkg: "@anthropic-ai/claude-code", api: "anthropic", tool: "Read", toolArgs: `{"file_path":"FILE"}`, thinking: true,
		args: []string{"-p", readPrompt, "--allowedTools", "Read"},
		env: func(_ *testing.T, base, _ string) []string {
			return []string{"ANTHROPIC_BASE_URL=" + base, "ANTHROPIC_AUTH_TOKEN=" + fixtures.FakeKey}
		}},
	{name: "codex", pkg: "@openai/codex", api: "responses", tool: "exec", toolArgs: `{"input":"const r = await tools.exec_command({cmd: \"cat FILE\"}); text(r)"}`,
		args: append(codexProvider("BASE"), "exec", "--skip-git-repo-check", readPrompt),
		env: func(_ *testing.T, _, _ string) []string {
			return []string{"OPENAI_API_KEY=" + fixtures.FakeKey}
		}},
	{name: "gemini", pkg: "@google/gemini-cli", api: "gemini", tool: "read_file", toolArgs: `{"file_path":"FILE"}`,
		args: []string{"-m", "gemini-2.5-flash", "-p", readPrompt},
		env: func(_ *testing.T, base, _ string) []string {
			return []string{"GOOGLE_GEMINI_BASE_URL=" + base, "GEMINI_API_KEY=" + fixtures.FakeKey, "GEMINI_CLI_TRUST_WORKSPACE=true"}
		},
		home: geminiRecordHome},
	{name: "qwen", pkg: "@qwen-code/qwen-code", api: "openai-chat", tool: "read_file", toolArgs: `{"file_path":"FILE"}`,
		args: []string{"--auth-type", "openai", "-p", readPrompt},
		env: func(t *testing.T, base, _ string) []string {
			return append(quietQwen(t), "OPENAI_BASE_URL="+base+"/v1", "OPENAI_API_KEY="+fixtures.FakeKey)
		}},
	{name: "opencode", pkg: "opencode-ai", api: "anthropic", tool: "read", toolArgs: `{"filePath":"FILE"}`,
		args: []string{"run", "-m", "anthropic/claude-sonnet-4-5", readPrompt},
		env: func(t *testing.T, base, _ string) []string {
			cfg, _ := json.Marshal(map[string]any{"provider": map[string]any{
				"anthropic": map[string]any{"options": map[string]string{"baseURL": base + "/v1", "apiKey": fixtures.FakeKey}}}})
			return append(quietOpenCode(t), "OPENCODE_CONFIG_CONTENT="+string(cfg))
		}},
	{name: "cline", pkg: "cline", api: "openai-chat", tool: "read_files", toolArgs: `{"files":[{"path":"FILE"}]}`,
		args: []string{readPrompt},
		env: func(t *testing.T, base, _ string) []string {
			doc, _ := json.Marshal(map[string]any{"version": 1, "lastUsedProvider": "openai-compatible", "modes": map[string]any{},
				"providers": map[string]any{"openai-compatible": map[string]any{
					"settings":  map[string]string{"provider": "openai-compatible", "apiKey": fixtures.FakeKey, "baseUrl": base + "/v1"},
					"updatedAt": "2026-01-01T00:00:00.000Z", "tokenSource": "manual"}}})
			p := filepath.Join(t.TempDir(), "providers.json")
			if err := os.WriteFile(p, doc, 0o600); err != nil {
				t.Fatal(err)
			}
			return []string{"CLINE_PROVIDER_SETTINGS_PATH=" + p, "CLINE_SESSION_BACKEND_MODE=local"}
		}},
}

// codexProvider are the -c overrides of the launcher's Codex preset with
// base (replaced when run) as the provider's origin.
func codexProvider(base string) []string {
	return []string{
		"-c", `model_provider="dual-pool"`,
		"-c", `model_providers.dual-pool.name="dual-proxy pool"`,
		"-c", `model_providers.dual-pool.base_url="` + base + `/v1"`,
		"-c", `model_providers.dual-pool.env_key="OPENAI_API_KEY"`,
		"-c", `model_providers.dual-pool.wire_api="responses"`,
	}
}

// geminiRecordHome is a HOME Gemini CLI reads settings from (geminiHome)
// whose settings select API-key auth, which the launcher's preset selects
// through its system settings file.
func geminiRecordHome(t *testing.T) string {
	env := geminiHome(t)
	home := strings.TrimPrefix(env[len(env)-1], "HOME=")
	if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(`{"security":{"auth":{"selectedType":"gemini-api-key"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

func TestAgentRequestsAsRecorded(t *testing.T) {
	if os.Getenv("DUAL_PROXY_AGENTS_DIR") == "" {
		t.Fatal("DUAL_PROXY_AGENTS_DIR is not set: set it to an npm prefix holding the agent CLIs, " +
			"e.g. DUAL_PROXY_AGENTS_DIR=/tmp/dual-proxy-agents (.ci/run installs them there)")
	}
	mock := buildMockLLM(t)
	l := agentlab.New(t)
	record := os.Getenv(recordAgentsEnv) == "1"
	// The namespace and the mock binary outlive the parallel subtests:
	// a test's cleanups run after its subtests have finished.
	for i, a := range recordedAgents {
		t.Run("POOL-21/"+a.name+"-requests-shaped-as-recorded", func(t *testing.T) {
			t.Parallel()
			requireRecordedAgent(t, a)
			version := agentVersion(t, a.pkg)
			live := runRecordedAgent(t, l, mock, 18300+i, a, version, record)
			if !record {
				compareRecording(t, a.name, version, live)
			}
		})
	}
}

// requireRecordedAgent skips t, naming what is missing, when agent a's CLI
// is not installed in DUAL_PROXY_AGENTS_DIR, so one agent can be recorded
// or compared without installing all six; under CI (CI=true), which
// installs every agent, a missing one fails t.
func requireRecordedAgent(t *testing.T, a recordedAgent) {
	t.Helper()
	dir := os.Getenv("DUAL_PROXY_AGENTS_DIR")
	var missing []string
	for _, p := range []string{
		filepath.Join(dir, "node_modules", a.pkg, "package.json"),
		filepath.Join(dir, "node_modules", ".bin", a.name),
	} {
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := fmt.Sprintf("%s is not installed in DUAL_PROXY_AGENTS_DIR=%s (no %s): npm install --prefix %s %s",
		a.name, dir, strings.Join(missing, ", "), dir, a.pkg)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// runRecordedAgent runs agent a's session against a mock of its API on
// port and returns its model calls as recordings: credentials faked, HOME
// and the working directory replaced by the placeholders.
func runRecordedAgent(t *testing.T, l *agentlab.Lab, mock string, port int, a recordedAgent, version string, record bool) []fixtures.AgentRequest {
	exe := agentBin(t, a.name)
	home, cwd := t.TempDir(), t.TempDir()
	if a.home != nil {
		home = a.home(t)
	}
	file := filepath.Join(cwd, "hello.txt")
	if err := os.WriteFile(file, []byte(secretWord+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	logFile := filepath.Join(t.TempDir(), "calls.jsonl")
	margs := []string{mock, "-addr", "127.0.0.1:" + strconv.Itoa(port), "-api", a.api, "-log", logFile, "-log-raw",
		"-tool", a.tool, "-tool-args", strings.ReplaceAll(a.toolArgs, "FILE", file), "-reply", "ok"}
	if a.thinking {
		margs = append(margs, "-thinking")
	}
	l.StartServer(t, "mockllm listening", margs...)
	args := make([]string, len(a.args))
	for i, s := range a.args {
		args[i] = strings.ReplaceAll(s, "BASE", base)
	}
	env := append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8"}, a.env(t, base, home)...)
	cmd := l.Command(env, append([]string{exe}, args...)...)
	cmd.Dir = cwd
	r := agentlab.Run(t, cmd, 240*time.Second)
	t.Logf("%s %s: a session with one tool call in %v, status %d", a.name, version, r.Elapsed, r.Status)
	entries := agentlab.ReadJSONL(t, logFile)
	var out []fixtures.AgentRequest
	for _, e := range entries {
		if st, _ := e["mock_status"].(float64); st == 0 {
			continue // not a model call: a model list, a probe
		}
		out = append(out, recording(t, a, version, e, home, cwd))
	}
	if record {
		// Written before the session is checked: what an agent sent is
		// what to look at when it did not complete its session.
		writeRecording(t, a.name, version, out)
	}
	kinds := map[string]int{}
	for _, c := range out {
		kinds[c.Kind]++
	}
	if r.Status != 0 || kinds[fixtures.KindPrompt] == 0 || kinds[fixtures.KindToolResult] == 0 {
		t.Fatalf("%s: status %d, model calls %v: want 0 and a call offering tools, then one with the tool result\nstdout: %s\nstderr: %s\ncalls:\n%s",
			a.name, r.Status, kinds, r.Stdout, r.Stderr, agentSummary(entries))
	}
	for _, c := range out {
		if c.Kind == fixtures.KindToolResult && !bytes.Contains(c.Body, []byte("pelican-42")) {
			t.Fatalf("%s: the call after the tool result does not hold the file's text: %s", a.name, c.File)
		}
	}
	return out
}

// authHeaders are the credential headers, each with its fake value.
var authHeaders = map[string]string{"authorization": "Bearer " + fixtures.FakeKey, "x-api-key": fixtures.FakeKey,
	"x-goog-api-key": fixtures.FakeKey, "api-key": fixtures.FakeKey}

// recording is one logged model call as a fixture.
func recording(t *testing.T, a recordedAgent, version string, e map[string]any, home, cwd string) fixtures.AgentRequest {
	t.Helper()
	raw64, _ := e["raw_body"].(string)
	var body []byte
	if err := json.Unmarshal([]byte(strconv.Quote(raw64)), &body); err != nil {
		t.Fatalf("raw_body: %v", err)
	}
	body = placeholders(body, home, cwd)
	if !json.Valid(body) {
		t.Fatalf("%s sent a body that is not JSON (a Content-Encoding the mock does not undo?): %.200q", a.name, body)
	}
	h := map[string]string{}
	hdrs, _ := e["headers"].(map[string]any)
	for k, v := range hdrs {
		k = strings.ToLower(k)
		s, _ := v.(string)
		if fake, ok := authHeaders[k]; ok {
			s = fake
		}
		if k == "host" || k == "content-length" {
			continue
		}
		h[k] = string(placeholders([]byte(s), home, cwd))
	}
	path, _ := e["path"].(string)
	query, _ := e["query"].(string)
	method, _ := e["method"].(string)
	return fixtures.AgentRequest{Agent: a.name, Version: version, API: a.api, Kind: fixtures.CallKind(body),
		Method: method, Path: path, Query: query, Header: h, Body: body}
}

// placeholders replaces the test's working directory, HOME and
// DUAL_PROXY_AGENTS_DIR in b by the fixtures' placeholders (the working
// directory first: it may lie under HOME), as written and as JSON-escaped,
// and the project name Qwen Code makes of the working directory
// (fixtures.ProjectName) by fixtures.WorkNamePlaceholder.
func placeholders(b []byte, home, cwd string) []byte {
	agents, _ := filepath.Abs(os.Getenv("DUAL_PROXY_AGENTS_DIR"))
	for _, r := range [][2]string{{cwd, fixtures.WorkPlaceholder}, {fixtures.ProjectName(cwd), fixtures.WorkNamePlaceholder},
		{home, fixtures.HomePlaceholder}, {agents, fixtures.AgentsPlaceholder}} {
		b = bytes.ReplaceAll(b, []byte(r[0]), []byte(r[1]))
		esc, _ := json.Marshal(r[0])
		b = bytes.ReplaceAll(b, esc[1:len(esc)-1], []byte(r[1]))
	}
	return b
}

// recordingDir is testdata/agents/AGENT/VERSION.
func recordingDir(t *testing.T, agent, version string) string {
	return fixtures.Path(t, "agents", agent, version)
}

// writeRecording replaces the recordings of agent version with live.
func writeRecording(t *testing.T, agent, version string, live []fixtures.AgentRequest) {
	dir := recordingDir(t, agent, version)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, c := range live {
		b, err := fixtures.EncodeAgentRequest(c)
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("%02d-%s.json", i+1, c.Kind)
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("recorded %d model calls of %s %s in %s", len(live), agent, version, dir)
}

// compareRecording compares the shape of each kind of model call in live
// with the recording of agent: of this version when there is one, else of
// the newest version recorded.
func compareRecording(t *testing.T, agent, version string, live []fixtures.AgentRequest) {
	recorded := version
	if _, err := os.Stat(recordingDir(t, agent, version)); err != nil {
		vs, _ := filepath.Glob(filepath.Join(fixtures.Path(t, "agents", agent), "*"))
		if len(vs) == 0 {
			t.Fatalf("no recording of %s in testdata/agents/%s: record one with %s=1 (testdata/agents/README.md)", agent, agent, recordAgentsEnv)
		}
		sort.Slice(vs, func(i, j int) bool { return versionLess(filepath.Base(vs[i]), filepath.Base(vs[j])) })
		recorded = filepath.Base(vs[len(vs)-1])
		t.Logf("%s %s has no recording; comparing with %s's", agent, version, recorded)
	}
	var want []fixtures.AgentRequest
	for _, p := range fixtures.Glob(t, "agents/"+agent+"/"+recorded+"/*.json") {
		want = append(want, fixtures.ReadAgentRequest(t, p))
	}
	var changes []string
	for _, kind := range []string{fixtures.KindPrompt, fixtures.KindToolResult, fixtures.KindSide} {
		w, g := ofKind(want, kind), ofKind(live, kind)
		if len(w) == 0 && len(g) == 0 {
			continue
		}
		if len(w) == 0 || len(g) == 0 {
			changes = append(changes, fmt.Sprintf("%s calls: %d recorded, %d now", kind, len(w), len(g)))
			continue
		}
		added, removed := fixtures.ShapeDiff(w, g)
		for _, s := range added {
			changes = append(changes, kind+" call: new "+s)
		}
		for _, s := range removed {
			changes = append(changes, kind+" call: gone "+s)
		}
	}
	if len(changes) > 0 {
		t.Fatalf("%s %s sends requests shaped otherwise than its recording (testdata/agents/%s/%s):\n  %s\n"+
			"The pool's translation and pool tests read the recordings: record this version with\n"+
			"  %s=1 go test -tags agents -count=1 -run 'AgentRequestsAsRecorded/POOL-21/%s-' ./cmd/dual-proxy/\n"+
			"then run go test ./pool/... and commit testdata/agents/%s/%s (testdata/agents/README.md).",
			agent, version, agent, recorded, strings.Join(changes, "\n  "), recordAgentsEnv, agent, agent, version)
	}
	t.Logf("%s %s: %d model calls shaped as recorded with %s", agent, version, len(live), recorded)
}

func ofKind(rs []fixtures.AgentRequest, kind string) []fixtures.AgentRequest {
	var out []fixtures.AgentRequest
	for _, r := range rs {
		if r.Kind == kind {
			out = append(out, r)
		}
	}
	return out
}

// versionLess orders dotted versions numerically, part by part.
func versionLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) && i < len(pb); i++ {
		na, ea := strconv.Atoi(pa[i])
		nb, eb := strconv.Atoi(pb[i])
		if ea == nil && eb == nil && na != nb {
			return na < nb
		}
		if (ea != nil || eb != nil) && pa[i] != pb[i] {
			return pa[i] < pb[i]
		}
	}
	return len(pa) < len(pb)
}
