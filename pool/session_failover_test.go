package pool

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/mockllm"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/pool/balance"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// A coding agent's session with thinking on and tools, as agents run it
// (SPEC POOL-18, POOL-25): ten turns, the whole history resent each turn,
// on a pool of strict mock members (each refuses reasoning it did not
// mint, Anthropic tool ids outside its alphabet and unpaired tool results,
// with its provider's 400). The first member fails at turn 3 (the session
// moves to the second), the second at turn 7 (back to the first, its
// cooldown over). Every turn must be a 200 with one binding move each
// time, and no member may refuse a request.

// sessMember is one member of a session world.
type sessMember struct {
	name, api, speaks string
	kimi              bool // Chat member minting Kimi-style tool ids
}

// sessWorld is a pool of strict mock members on a manual clock.
type sessWorld struct {
	t       *testing.T
	clock   *testkit.Clock
	pool    *Pool
	srv     *httptest.Server
	mocks   map[string]*mockllm.Channel
	turn    atomic.Int32
	fail    map[string]int // member → the turn it answers 529
	mu      sync.Mutex
	records []balance.CallRecord
}

// sessTurn is what every member answers at turn n: thinking, and a tool
// call except on turns 4, 8 and 10, which end the assistant turn with
// text. Turn 5 calls a tool with no input.
func sessTurn(n int) mockllm.Turn {
	t := mockllm.Turn{Reasoning: fmt.Sprintf("step %d: think it through", n)}
	switch n {
	case 4, 8, 10:
		t.Text = fmt.Sprintf("done with part %d", n)
	case 5:
		t.ToolCalls = []mockllm.ToolCall{{Name: "Now", Args: "{}"}}
	default:
		t.ToolCalls = []mockllm.ToolCall{{Name: "Bash", Args: fmt.Sprintf(`{"command":"make step%d"}`, n)}}
	}
	return t
}

func newSessWorld(t *testing.T, members []sessMember, fail map[string]int) *sessWorld {
	t.Helper()
	w := &sessWorld{t: t, clock: testkit.NewClock(time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)), mocks: map[string]*mockllm.Channel{}, fail: fail}
	var y strings.Builder
	y.WriteString("channels:\n")
	var names []string
	for _, m := range members {
		ch := &mockllm.Channel{API: m.speaks, Strict: true, KimiToolIDs: m.kimi}
		name := m.name
		ch.Pick = func(mockllm.Call) *mockllm.Turn {
			n := int(w.turn.Load())
			if w.fail[name] == n {
				return &mockllm.Turn{Status: 529}
			}
			tt := sessTurn(n)
			return &tt
		}
		srv := httptest.NewServer(ch)
		t.Cleanup(srv.Close)
		w.mocks[m.name] = ch
		names = append(names, m.name)
		fmt.Fprintf(&y, "  %s: {api: %s, base_url: %q, api_key: sk-%s-secret}\n", m.name, m.api, srv.URL, m.name)
	}
	fmt.Fprintf(&y, "pools:\n  p:\n    members: [%s]\n", strings.Join(names, ", "))
	cfg, err := config.ParseConfig([]byte(y.String()), func(string) string { return "" })
	if err != nil {
		t.Fatalf("config: %v\n%s", err, y.String())
	}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	w.pool = New(cfg, Options{Transport: tr, Token: mixToken, Now: w.clock.Now, Observer: Observer{Call: func(r balance.CallRecord) {
		w.mu.Lock()
		w.records = append(w.records, r)
		w.mu.Unlock()
	}}})
	w.srv = httptest.NewServer(w.pool)
	t.Cleanup(w.srv.Close)
	return w
}

// convo is a client's side of the session in its API: the request of the
// next turn, and what it keeps of an answer.
type convo interface {
	request() clientCall
	answered(t *testing.T, body []byte) // appends the answer and the next user message
}

// run plays ten turns and checks each: 200, the member plan names, one
// attempt except on a failover turn (two). The first member's cooldown is
// over at turn 7.
func (w *sessWorld) run(c convo, plan ...string) {
	t := w.t
	for n := 1; n <= 10; n++ {
		w.turn.Store(int32(n))
		if n == 7 {
			w.clock.Advance(10 * time.Minute) // the first member's cooldown is over
		}
		resp, body := w.call(c)
		want, attempts := plan[n-1], "1"
		if n > 1 && plan[n-2] != want {
			attempts = "2"
		}
		if resp.StatusCode != 200 || resp.Header.Get("X-Pool-Member") != want || resp.Header.Get("X-Pool-Attempts") != attempts {
			t.Fatalf("turn %d: %d member %q attempts %q, want %s with %s attempt(s)\n%s", n, resp.StatusCode,
				resp.Header.Get("X-Pool-Member"), resp.Header.Get("X-Pool-Attempts"), want, attempts, body)
		}
		c.answered(t, body)
	}
	for name, m := range w.mocks {
		if n := m.Refused(); n != 0 {
			for _, call := range m.Calls() {
				if call.Status == 400 {
					b, _ := json.Marshal(call.Body)
					t.Logf("%s refused: %s", name, b)
				}
			}
			t.Fatalf("member %s refused %d calls", name, n)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	moves, planned := 0, 0
	for i := 1; i < len(plan); i++ {
		if plan[i] != plan[i-1] {
			planned++
		}
	}
	for i, r := range w.records {
		if r.Class == config.ClassState || r.Status != 200 {
			t.Fatalf("call %d: %+v", i+1, r)
		}
		if i > 0 && r.Member != w.records[i-1].Member {
			moves++
		}
	}
	if len(w.records) != 10 || moves != planned {
		t.Fatalf("%d calls, %d binding moves: %+v", len(w.records), moves, w.records)
	}
}

// call sends the next turn of c.
func (w *sessWorld) call(c convo) (*http.Response, []byte) {
	w.t.Helper()
	req := c.request()
	hr, _ := http.NewRequest(http.MethodPost, w.srv.URL+"/pool/p"+req.path, strings.NewReader(req.body))
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("X-Session-Id", "sess-failover")
	for k, v := range req.hdr {
		hr.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		w.t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, body
}

// restart replaces the pool by a new one on the same configuration and
// members with an empty state (a restarted instance: every signature of
// the session is of unknown origin).
func (w *sessWorld) restart() {
	opts := w.pool.opts
	opts.State = nil // a fresh memory state
	p := New(w.pool.cfg, opts)
	w.srv.Config.Handler = p
	w.pool = p
}

// anthropicConvo is Claude Code's side: streamed calls with thinking
// enabled, every content block kept as the stream built it.
type anthropicConvo struct {
	msgs []json.RawMessage
}

func newAnthropicConvo() *anthropicConvo {
	return &anthropicConvo{msgs: []json.RawMessage{json.RawMessage(`{"role":"user","content":"fix the build"}`)}}
}

func (c *anthropicConvo) request() clientCall {
	msgs, _ := json.Marshal(c.msgs)
	body := `{"model":"m","max_tokens":8000,"stream":true,"thinking":{"type":"enabled","budget_tokens":2048},` +
		`"tools":[{"name":"Bash","input_schema":{"type":"object"}},{"name":"Now","input_schema":{"type":"object"}}],"messages":` + string(msgs) + `}`
	return clientCall{"/v1/messages", body, map[string]string{"x-api-key": mixToken, "anthropic-version": "2023-06-01"}}
}

func (c *anthropicConvo) answered(t *testing.T, body []byte) {
	t.Helper()
	blocks := map[int]map[string]any{}
	args := map[int]string{}
	n := 0
	for _, ev := range strings.Split(string(body), "\n\n") {
		i := strings.Index(ev, "data: ")
		if i < 0 {
			continue
		}
		data := ev[i+6:]
		var e struct {
			Type  string         `json:"type"`
			Index int            `json:"index"`
			Block map[string]any `json:"content_block"`
			Delta map[string]any `json:"delta"`
		}
		if json.Unmarshal([]byte(data), &e) != nil {
			continue
		}
		switch e.Type {
		case "content_block_start":
			blocks[e.Index], n = e.Block, max(n, e.Index+1)
		case "content_block_delta":
			b := blocks[e.Index]
			switch e.Delta["type"] {
			case "text_delta":
				b["text"] = b["text"].(string) + e.Delta["text"].(string)
			case "thinking_delta":
				b["thinking"] = b["thinking"].(string) + e.Delta["thinking"].(string)
			case "signature_delta":
				b["signature"] = b["signature"].(string) + e.Delta["signature"].(string)
			case "input_json_delta":
				args[e.Index] += e.Delta["partial_json"].(string)
			}
		case "error":
			t.Fatalf("error event: %s", body)
		}
	}
	var content []map[string]any
	var results []string
	for i := 0; i < n; i++ {
		b := blocks[i]
		if b["type"] == "tool_use" {
			in := args[i]
			if in == "" {
				in = "{}"
			}
			b["input"] = json.RawMessage(in)
			results = append(results, fmt.Sprintf(`{"type":"tool_result","tool_use_id":%q,"content":"ok"}`, b["id"]))
		}
		content = append(content, b)
	}
	msg, _ := json.Marshal(map[string]any{"role": "assistant", "content": content})
	c.msgs = append(c.msgs, msg)
	if len(results) > 0 {
		c.msgs = append(c.msgs, json.RawMessage(`{"role":"user","content":[`+strings.Join(results, ",")+`]}`))
	} else {
		c.msgs = append(c.msgs, json.RawMessage(`{"role":"user","content":"go on"}`))
	}
}

// chatConvo is an OpenAI-compatible agent's side (OpenCode on a Chat
// provider): JSON answers, the assistant message kept as answered.
type chatConvo struct {
	msgs     []json.RawMessage
	emptyArg bool // a tool call without input came back as "{}"
}

func newChatConvo() *chatConvo {
	return &chatConvo{msgs: []json.RawMessage{json.RawMessage(`{"role":"user","content":"fix the build"}`)}}
}

func (c *chatConvo) request() clientCall {
	msgs, _ := json.Marshal(c.msgs)
	body := `{"model":"m","max_tokens":8000,"reasoning_effort":"medium","tools":[{"type":"function","function":{"name":"Bash","parameters":{"type":"object"}}},` +
		`{"type":"function","function":{"name":"Now","parameters":{"type":"object"}}}],"messages":` + string(msgs) + `}`
	return clientCall{"/v1/chat/completions", body, map[string]string{"Authorization": "Bearer " + mixToken}}
}

func (c *chatConvo) answered(t *testing.T, body []byte) {
	t.Helper()
	var doc struct {
		Choices []struct {
			Message json.RawMessage `json:"message"`
		} `json:"choices"`
	}
	var msg struct {
		ToolCalls []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	}
	if json.Unmarshal(body, &doc) != nil || len(doc.Choices) != 1 || json.Unmarshal(doc.Choices[0].Message, &msg) != nil {
		t.Fatalf("chat answer %s", body)
	}
	c.msgs = append(c.msgs, doc.Choices[0].Message)
	for _, tc := range msg.ToolCalls {
		if tc.Function.Name == "Now" && tc.Function.Arguments == "{}" {
			c.emptyArg = true
		}
		c.msgs = append(c.msgs, json.RawMessage(fmt.Sprintf(`{"role":"tool","tool_call_id":%q,"content":"ok"}`, tc.ID)))
	}
	if len(msg.ToolCalls) == 0 {
		c.msgs = append(c.msgs, json.RawMessage(`{"role":"user","content":"go on"}`))
	}
}

// geminiConvo is Gemini CLI's side: JSON answers, the model's content kept
// as answered (thought signatures included).
type geminiConvo struct {
	contents []json.RawMessage
}

func newGeminiConvo() *geminiConvo {
	return &geminiConvo{contents: []json.RawMessage{json.RawMessage(`{"role":"user","parts":[{"text":"fix the build"}]}`)}}
}

func (c *geminiConvo) request() clientCall {
	cs, _ := json.Marshal(c.contents)
	body := `{"tools":[{"functionDeclarations":[{"name":"Bash","parameters":{"type":"object"}},{"name":"Now","parameters":{"type":"object"}}]}],` +
		`"generationConfig":{"thinkingConfig":{"includeThoughts":true}},"contents":` + string(cs) + `}`
	return clientCall{"/v1beta/models/m:generateContent", body, map[string]string{"x-goog-api-key": mixToken}}
}

func (c *geminiConvo) answered(t *testing.T, body []byte) {
	t.Helper()
	var doc struct {
		Candidates []struct {
			Content json.RawMessage `json:"content"`
		} `json:"candidates"`
	}
	var content struct {
		Parts []struct {
			FunctionCall *struct {
				Name string `json:"name"`
			} `json:"functionCall"`
		} `json:"parts"`
	}
	if json.Unmarshal(body, &doc) != nil || len(doc.Candidates) != 1 || json.Unmarshal(doc.Candidates[0].Content, &content) != nil {
		t.Fatalf("gemini answer %s", body)
	}
	c.contents = append(c.contents, doc.Candidates[0].Content)
	var resps []string
	for _, p := range content.Parts {
		if p.FunctionCall != nil {
			resps = append(resps, fmt.Sprintf(`{"functionResponse":{"name":%q,"response":{"output":"ok"}}}`, p.FunctionCall.Name))
		}
	}
	if len(resps) == 0 {
		resps = []string{`{"text":"go on"}`}
	}
	c.contents = append(c.contents, json.RawMessage(`{"role":"user","parts":[`+strings.Join(resps, ",")+`]}`))
}

func TestSessionSurvivesFailover(t *testing.T) {
	t.Run("POOL-18/thinking-session-fails-over-and-returns-anthropic-members", func(t *testing.T) {
		w := newSessWorld(t, []sessMember{{name: "a", api: "anthropic", speaks: mockllm.Anthropic}, {name: "b", api: "anthropic", speaks: mockllm.Anthropic}},
			map[string]int{"a": 3, "b": 7})
		w.run(newAnthropicConvo(), "a", "a", "b", "b", "b", "b", "a", "a", "a", "a")
	})
	t.Run("POOL-18/thinking-session-fails-over-and-returns-anthropic-and-kimi-chat-members", func(t *testing.T) {
		w := newSessWorld(t, []sessMember{{name: "a", api: "anthropic", speaks: mockllm.Anthropic}, {name: "k", api: "openai-chat", speaks: mockllm.Chat, kimi: true}},
			map[string]int{"a": 3, "k": 7})
		w.run(newAnthropicConvo(), "a", "a", "k", "k", "k", "k", "a", "a", "a", "a")
		// The Chat member got its own ids back (POOL-25).
		var ids []string
		for _, call := range w.mocks["k"].Calls() {
			msgs, _ := call.Body["messages"].([]any)
			for _, m := range msgs {
				if mm := m.(map[string]any); mm["role"] == "tool" {
					ids = append(ids, mm["tool_call_id"].(string))
				}
			}
		}
		if len(ids) == 0 || !strings.HasPrefix(ids[len(ids)-1], "functions.") {
			t.Fatalf("tool ids at the Chat member: %q", ids)
		}
	})
	t.Run("POOL-18/thinking-session-fails-over-and-returns-anthropic-and-gemini-members", func(t *testing.T) {
		w := newSessWorld(t, []sessMember{{name: "a", api: "anthropic", speaks: mockllm.Anthropic}, {name: "g", api: "gemini", speaks: mockllm.Gemini}},
			map[string]int{"a": 3, "g": 7})
		w.run(newAnthropicConvo(), "a", "a", "g", "g", "g", "g", "a", "a", "a", "a")
	})
	t.Run("POOL-25/chat-session-with-kimi-ids-fails-over-to-anthropic-and-returns", func(t *testing.T) {
		w := newSessWorld(t, []sessMember{{name: "k", api: "openai-chat", speaks: mockllm.Chat, kimi: true}, {name: "a", api: "anthropic", speaks: mockllm.Anthropic}},
			map[string]int{"k": 3, "a": 7})
		c := newChatConvo()
		w.run(c, "k", "k", "a", "a", "a", "a", "k", "k", "k", "k")
		if !c.emptyArg {
			t.Fatal("the tool called with no input did not come back with arguments {}")
		}
	})
	t.Run("POOL-18/gemini-session-fails-over-and-returns-thought-signatures", func(t *testing.T) {
		w := newSessWorld(t, []sessMember{{name: "g1", api: "gemini", speaks: mockllm.Gemini}, {name: "g2", api: "gemini", speaks: mockllm.Gemini}},
			map[string]int{"g1": 3, "g2": 7})
		w.run(newGeminiConvo(), "g1", "g1", "g2", "g2", "g2", "g2", "g1", "g1", "g1", "g1")
		placeholder := 0
		for _, call := range w.mocks["g2"].Calls() {
			b, _ := json.Marshal(call.Body)
			placeholder += strings.Count(string(b), "skip_thought_signature_validator")
		}
		if placeholder == 0 {
			t.Fatal("g2 never got the placeholder for g1's signatures")
		}
	})
	t.Run("POOL-18/mixed-pool-anthropic-chat-gemini", func(t *testing.T) {
		w := newSessWorld(t, []sessMember{{name: "a", api: "anthropic", speaks: mockllm.Anthropic}, {name: "k", api: "openai-chat", speaks: mockllm.Chat, kimi: true},
			{name: "g", api: "gemini", speaks: mockllm.Gemini}}, map[string]int{"a": 3, "k": 5, "g": 7})
		w.run(newAnthropicConvo(), "a", "a", "k", "k", "g", "g", "a", "a", "a", "a")
	})
	t.Run("POOL-18/signature-of-unknown-origin-refused-once-then-left-out", func(t *testing.T) {
		w := newSessWorld(t, []sessMember{{name: "a", api: "anthropic", speaks: mockllm.Anthropic}, {name: "b", api: "anthropic", speaks: mockllm.Anthropic}},
			map[string]int{"a": 3})
		c := newAnthropicConvo()
		for n := 1; n <= 4; n++ {
			w.turn.Store(int32(n))
			resp, body := w.call(c)
			member, attempts := resp.Header.Get("X-Pool-Member"), resp.Header.Get("X-Pool-Attempts")
			want := map[int]string{1: "a 1", 2: "a 1", 3: "b 3", 4: "b 1"}[n]
			if resp.StatusCode != 200 || member+" "+attempts != want {
				t.Fatalf("turn %d: %d %s %s, want %s\n%s", n, resp.StatusCode, member, attempts, want, body)
			}
			c.answered(t, body)
			if n == 2 {
				w.restart()
			}
		}
		// Turn 3: a failed (529), b refused a's signatures of unknown origin
		// once and served the call again without them; turn 4 went straight
		// to b (no cooldown, no move) and b refused nothing more.
		if n := w.mocks["b"].Refused(); n != 1 {
			t.Fatalf("b refused %d calls", n)
		}
		for _, r := range w.records[2:] {
			if r.Member != "b" || r.Status != 200 {
				t.Fatalf("records %+v", w.records)
			}
		}
	})
}
