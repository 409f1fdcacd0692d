package pool_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/testbed/fixtures"
	"github.com/dual-proxy/dual-proxy/internal/testbed/mockllm"
	"github.com/dual-proxy/dual-proxy/pool"
	"github.com/dual-proxy/dual-proxy/pool/api"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// agentToken is the pool token the recorded requests are sent with, in
// place of their fake key.
const agentToken = "dpx-agent-token"

// memberLimit is the output limit the member's channel declares for the
// agent's model, below what most agents ask for (Claude Code 64000,
// OpenCode 32000 and 48000, Cline 32000, Qwen Code 8000): the pool must
// lower it (SPEC POOL-25), or the strict member refuses the call.
const memberLimit = 4096

// agentSession is one agent version's recorded calls, in order.
type agentSession struct {
	name  string // AGENT-VERSION
	calls []fixtures.AgentRequest
}

func agentSessions(t *testing.T) []agentSession {
	var out []agentSession
	for _, r := range fixtures.AgentRequests(t) {
		name := r.Agent + "-" + r.Version
		if len(out) == 0 || out[len(out)-1].name != name {
			out = append(out, agentSession{name: name})
		}
		out[len(out)-1].calls = append(out[len(out)-1].calls, r)
	}
	return out
}

// TestAgentSessionsOnForeignMembers sends each agent's recorded session
// (testdata/agents: its title call, its first call, the call after the
// tool result) as the agent sent it through a pool whose one member speaks
// another API, for each channel api that makes the pool translate: a
// strict mock member that refuses what its provider refuses (foreign
// reasoning signatures, tool ids outside Anthropic's alphabet, unpaired
// tool results, an output limit above the model's; an `openai` member, as
// OpenAI's own API, a Chat argument OpenAI does not document) and calls the agent's
// own tool when a call offers tools. Every call succeeds: the first gets
// the tool call in the agent's API, the follow-up gets the answer, and the
// member got the tool result.
func TestAgentSessionsOnForeignMembers(t *testing.T) {
	for _, s := range agentSessions(t) {
		from := apikind.Kind(s.calls[0].API)
		for _, channelAPI := range config.ChannelAPIs {
			to := api.MemberKind(channelAPI, from)
			if to == from {
				continue
			}
			t.Run(fmt.Sprintf("POOL-21/POOL-25/%s-on-%s-member", s.name, channelAPI), func(t *testing.T) {
				testAgentSession(t, s, from, channelAPI, to)
			})
		}
	}
}

// recordedModel is the model a recorded call names (Gemini: in the path).
func recordedModel(r fixtures.AgentRequest) string {
	if i := strings.Index(r.Path, "/models/"); i >= 0 {
		m, _, _ := strings.Cut(r.Path[i+len("/models/"):], ":")
		return m
	}
	var doc struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(r.Body, &doc)
	return doc.Model
}

// agentTool is the tool the recorded session called: the name of the
// first tool call in its call after the tool result.
func agentTool(t *testing.T, s agentSession) string {
	for _, r := range s.calls {
		if r.Kind != fixtures.KindToolResult {
			continue
		}
		model := recordedModel(r)
		n, err := api.DecodeRequest(apikind.Kind(r.API), r.Body, model, strings.Contains(r.Path, ":stream"))
		if err != nil {
			t.Fatalf("%s: %v", r.File, err)
		}
		for _, m := range n.Messages {
			for _, p := range m.Parts {
				if p.Kind == neutral.KindToolCall {
					return p.Name
				}
			}
		}
	}
	t.Fatalf("%s: no recorded call after a tool result", s.name)
	return ""
}

// testAgentSession sends session s through a pool whose one member, a
// channel of api channelAPI, is sent API to, checks every answer, and
// returns the member with the calls it got.
func testAgentSession(t *testing.T, s agentSession, from apikind.Kind, channelAPI string, to apikind.Kind) *mockllm.Channel {
	tool := agentTool(t, s)
	models := map[string]bool{}
	for _, r := range s.calls {
		models[recordedModel(r)] = true
	}
	limits := map[string]int{}
	var declared []string
	for m := range models {
		limits[m] = memberLimit
		declared = append(declared, fmt.Sprintf("{id: %q, max_tokens: %d}", m, memberLimit))
	}
	member := &mockllm.Channel{API: string(to), Strict: true, Limits: limits, Cache: &mockllm.PromptCache{},
		OpenAIArgs: channelAPI == config.APIOpenAI}
	member.Pick = func(c mockllm.Call) *mockllm.Turn {
		raw := string(c.Raw)
		switch {
		case fixtures.CallKind(c.Raw) == fixtures.KindToolResult:
			return &mockllm.Turn{Text: "the word is pelican-42"}
		case strings.Contains(raw, `"`+tool+`"`):
			return &mockllm.Turn{ToolCalls: []mockllm.ToolCall{{Name: tool, Args: `{"path":"hello.txt"}`}}}
		}
		return &mockllm.Turn{Text: "a title"}
	}
	msrv := httptest.NewServer(member)
	defer msrv.Close()
	base := msrv.URL
	if channelAPI == config.APIOpenAI {
		base += "/v1"
	}
	y := fmt.Sprintf("channels:\n  m: {api: %s, base_url: %q, api_key: sk-member-secret, models: [%s]}\npools:\n  p:\n    members: [m]\n",
		channelAPI, base, strings.Join(declared, ", "))
	cfg, err := config.ParseConfig([]byte(y), func(string) string { return "" })
	if err != nil {
		t.Fatalf("config: %v\n%s", err, y)
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	psrv := httptest.NewServer(pool.New(cfg, pool.Options{Transport: tr, Token: agentToken}))
	defer psrv.Close()

	for _, r := range s.calls {
		status, answer := sendRecorded(t, psrv.URL+"/pool/p", r)
		if status != http.StatusOK {
			t.Fatalf("%s through a member of api %s: %d %s", r.File, channelAPI, status, answer)
		}
		text, calls, err := readAnswer(from, answer)
		if err != nil {
			t.Fatalf("%s: the answer does not read as %s: %v\n%s", r.File, from, err, answer)
		}
		switch r.Kind {
		case fixtures.KindPrompt:
			if len(calls) != 1 || calls[0] != tool {
				t.Fatalf("%s: the agent got tool calls %v and text %q, want one call of %s\n%s", r.File, calls, text, tool, answer)
			}
		case fixtures.KindToolResult:
			if !strings.Contains(text, "pelican-42") {
				t.Fatalf("%s: the agent got text %q and calls %v after its tool result, want the member's answer", r.File, text, calls)
			}
		}
	}
	got := member.Calls()
	if len(got) != len(s.calls) || member.Refused() != 0 {
		t.Fatalf("the member got %d calls for the agent's %d and refused %d", len(got), len(s.calls), member.Refused())
	}
	if last := got[len(got)-1]; fixtures.CallKind(last.Raw) != fixtures.KindToolResult {
		t.Fatalf("the member's last call carries no tool result: %.300s", last.Raw)
	}
	return member
}

// TestSamplingHintsOnOpenAIMembers sends Gemini CLI's recorded session,
// whose every call carries generationConfig.topK, through a pool whose
// member is OpenAI's own API (channel api `openai`, a mock that refuses
// an argument OpenAI does not document, top_k among them) and through one
// whose member is an OpenAI-compatible server (`openai-chat`, which vLLM
// and Ollama read top_k from): the first gets the calls without top_k and
// answers them, the second gets top_k.
func TestSamplingHintsOnOpenAIMembers(t *testing.T) {
	var gemini []agentSession
	for _, s := range agentSessions(t) {
		if apikind.Kind(s.calls[0].API) == apikind.Gemini {
			gemini = append(gemini, s)
		}
	}
	if len(gemini) == 0 {
		t.Fatal("no recorded Gemini CLI session (testdata/agents/README.md)")
	}
	for _, s := range gemini {
		for _, c := range s.calls {
			if !bytes.Contains(c.Body, []byte(`"topK"`)) {
				t.Fatalf("%s: the recorded call carries no topK, the hint this test follows", c.File)
			}
		}
		for _, tc := range []struct {
			channelAPI string
			wantTopK   bool
		}{{config.APIOpenAI, false}, {config.APIOpenAIChat, true}} {
			verb := "left-out"
			if tc.wantTopK {
				verb = "kept"
			}
			t.Run(fmt.Sprintf("POOL-25/%s-on-%s-member-top_k-%s", s.name, tc.channelAPI, verb), func(t *testing.T) {
				member := testAgentSession(t, s, apikind.Gemini, tc.channelAPI, api.MemberKind(tc.channelAPI, apikind.Gemini))
				for i, c := range member.Calls() {
					if _, got := c.Body["top_k"]; got != tc.wantTopK {
						t.Fatalf("the member's call %d carries top_k: %v, want %v: %.300s", i+1, got, tc.wantTopK, c.Raw)
					}
				}
			})
		}
	}
}

// sendRecorded sends r to the pool at base as the agent sent it: its
// method, path, query, headers and body, the credential the pool token.
func sendRecorded(t *testing.T, base string, r fixtures.AgentRequest) (int, []byte) {
	t.Helper()
	u := base + r.Path
	if r.Query != "" {
		u += "?" + r.Query
	}
	req, err := http.NewRequest(r.Method, u, bytes.NewReader(r.Body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range r.Header {
		switch k {
		case "authorization":
			v = "Bearer " + agentToken
		case "x-api-key", "x-goog-api-key", "api-key":
			v = agentToken
		case "accept-encoding", "connection":
			continue // the transport's own
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// readAnswer reads an answer of API k, streamed (SSE) or not: its text
// and the names of its tool calls.
func readAnswer(k apikind.Kind, b []byte) (text string, calls []string, err error) {
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) {
		r, err := api.DecodeResponse(k, b)
		if err != nil {
			return "", nil, err
		}
		for _, p := range r.Parts {
			switch p.Kind {
			case neutral.KindText:
				text += p.Text
			case neutral.KindToolCall:
				calls = append(calls, p.Name)
			}
		}
		return text, calls, nil
	}
	dec := api.NewStreamDecoder(k)
	sse := wirefmt.NewSSEReader(bytes.NewReader(b))
	defer sse.Release()
	add := func(evs []neutral.Event) error {
		for _, e := range evs {
			switch {
			case e.Kind == neutral.EvError:
				return fmt.Errorf("error event in the stream: %v", e.Err)
			case e.Kind == neutral.EvPartStart && e.Part.Kind == neutral.KindToolCall:
				calls = append(calls, e.Part.Name)
			case e.Kind == neutral.EvDelta:
				text += e.Part.Text
			}
		}
		return nil
	}
	for {
		ev, rerr := sse.Next()
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			return "", nil, rerr
		}
		if ev.Comment {
			continue
		}
		if k == apikind.Responses && ev.Name == "response.output_item.added" {
			// A freeform tool's call (custom_tool_call) is Responses-only:
			// the pool writes it for Codex; no member stream it decodes
			// holds one.
			var added struct {
				Item struct{ Type, Name string } `json:"item"`
			}
			if json.Unmarshal(ev.Data, &added) == nil && added.Item.Type == "custom_tool_call" {
				calls = append(calls, added.Item.Name)
				continue
			}
		}
		evs, err := dec.Decode(ev.Name, ev.Data)
		if err != nil {
			return "", nil, err
		}
		if err := add(evs); err != nil {
			return "", nil, err
		}
	}
	evs, err := dec.End()
	if err != nil {
		return "", nil, err
	}
	return text, calls, add(evs)
}

// TestAgentSignaturesOfUnknownOrigin sends each recorded call that carries
// signed reasoning (Claude Code's call after its tool result holds the
// thinking block the recording's mock signed) through a pool whose strict
// member speaks the agent's own API and never minted that signature, as
// after a restart: the member refuses the call once, the pool sends it
// again without the signature and the agent gets its answer; the next
// call leaves the signature out without a refusal (SPEC POOL-18).
func TestAgentSignaturesOfUnknownOrigin(t *testing.T) {
	n := 0
	for _, r := range fixtures.AgentRequests(t) {
		if r.API != string(apikind.Anthropic) || !bytes.Contains(r.Body, []byte(`"signature"`)) {
			continue
		}
		n++
		name := strings.TrimSuffix(strings.ReplaceAll(r.File, "/", "-"), ".json")
		t.Run("POOL-18/"+name+"-foreign-signature-refused-once-then-left-out", func(t *testing.T) {
			member := &mockllm.Channel{API: mockllm.Anthropic, Strict: true, Turns: []mockllm.Turn{{Text: "the word is pelican-42"}}}
			msrv := httptest.NewServer(member)
			defer msrv.Close()
			y := fmt.Sprintf("channels:\n  a: {api: anthropic, base_url: %q, api_key: sk-member-secret}\npools:\n  p:\n    members: [a]\n", msrv.URL)
			cfg, err := config.ParseConfig([]byte(y), func(string) string { return "" })
			if err != nil {
				t.Fatal(err)
			}
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			psrv := httptest.NewServer(pool.New(cfg, pool.Options{Transport: tr, Token: agentToken}))
			defer psrv.Close()
			for turn, wantRefused := range []int{1, 1} {
				status, answer := sendRecorded(t, psrv.URL+"/pool/p", r)
				text, _, err := readAnswer(apikind.Anthropic, answer)
				if status != http.StatusOK || err != nil || !strings.Contains(text, "pelican-42") {
					t.Fatalf("send %d: %d %v %q\n%s", turn+1, status, err, text, answer)
				}
				if got := member.Refused(); got != wantRefused {
					t.Fatalf("after send %d the member refused %d calls, want %d", turn+1, got, wantRefused)
				}
			}
			for _, c := range member.Calls() {
				if c.Status == http.StatusOK && bytes.Contains(c.Raw, []byte(`"signature"`)) {
					t.Fatalf("the member answered a call holding a signature it did not mint: %.300s", c.Raw)
				}
			}
		})
	}
	if n == 0 {
		t.Fatal("no recorded agent call carries signed reasoning: the Claude Code recording should (testdata/agents/README.md)")
	}
}
