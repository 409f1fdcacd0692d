// Package mockllm is a scriptable model channel that speaks exactly one of
// the four LLM wire APIs (Anthropic Messages, OpenAI Chat Completions,
// OpenAI Responses, Gemini generateContent), for the pool's translation
// tests and the real-agent tests. Every other path is a 404,
// so a test proves that the pool sent the member's own API. A channel of
// API All is the one exception: a model endpoint an agent is pointed at
// directly, answering Anthropic Messages, Chat Completions and Responses on
// one port with the side routes agents probe (all.go).
//
// The answers are written by hand per API (wire.go), not with the pool's
// translate package, so the code under test is never the mock.
package mockllm

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
)

// The APIs a Channel can speak (the pool's channel `api` words; Responses
// is what an `api: openai` channel serves on /v1/responses).
const (
	Anthropic = "anthropic"
	Chat      = "openai-chat"
	Responses = "responses"
	Gemini    = "gemini"
	// All answers the model calls of Anthropic, Chat and Responses on one
	// port, each by its path (all.go).
	All = "all"
)

// FailEvery as a Channel's FailFirst fails every model call.
const FailEvery = -1

// ToolCall is a function call the model makes. Args is JSON object text.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Args string `json:"args"`
	// Custom: a call of a freeform tool (Responses "custom" tools, which
	// Codex offers): a Responses answer carries it as a custom_tool_call
	// item whose input is Args as plain text. Other APIs have no freeform
	// tools and answer a function call with Args.
	Custom bool `json:"custom,omitempty"`
}

// Turn is one scripted answer.
type Turn struct {
	// Status, when not 0 or 200, answers with the API's error document and
	// this HTTP status instead of an answer.
	Status int `json:"status,omitempty"`
	// Reasoning, Text and ToolCalls are the answer, in that order.
	Reasoning string     `json:"reasoning,omitempty"`
	Text      string     `json:"text,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// FailAfterOutput: a streamed answer sends its first visible output,
	// then the API's in-stream error (overloaded) and ends.
	FailAfterOutput bool `json:"fail_after_output,omitempty"`
	// DropAfterOutput: a streamed answer sends its first visible output,
	// then the connection is cut without an end event.
	DropAfterOutput bool `json:"drop_after_output,omitempty"`
	// InputTokens, CachedTokens, CacheWriteTokens and OutputTokens are the
	// usage reported (a channel with a PromptCache sets the first three
	// from its cache on Anthropic calls).
	InputTokens      int `json:"input_tokens,omitempty"`
	CachedTokens     int `json:"cached_tokens,omitempty"`
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
	OutputTokens     int `json:"output_tokens,omitempty"`
}

// Call is one request the channel received.
type Call struct {
	Method, Path, Query string
	Header              http.Header
	Body                map[string]any
	// Raw is the body as the client sent it (after a gzip or deflate
	// Content-Encoding is undone), byte for byte: Body re-encoded loses
	// key order and number spelling, which a recording of an agent's
	// request keeps (testdata/agents).
	Raw []byte
	// Status is what a model call was answered with (200 or the scripted
	// failure); 0 for other requests.
	Status int
}

// Channel is an http.Handler speaking API. Model calls take Turns in order;
// after the last, the last repeats. Safe for concurrent use.
type Channel struct {
	API   string
	Turns []Turn

	// FailFirst model calls are answered with FailStatus (and the API's
	// error document) before any Turn is used; FailEvery (any negative
	// value) fails every model call. 0 fails none.
	FailFirst, FailStatus int
	// FailFrom, when above 0, fails the FailFrom-th model call (counting
	// from 1; calls a Strict channel refused do not count) and every later
	// one with FailStatus: a channel that serves a session's first turns,
	// then goes down.
	FailFrom int
	// Pick, when set, chooses the answer to a model call from the request
	// (nil: the next Turn). Tool-using agents make extra calls (titles,
	// summaries) that would eat a fixed script.
	Pick func(Call) *Turn
	// Limits are the output limits the channel declares per model id
	// (tokens): a model call asking for more is refused 400 as its API
	// refuses it (limits.go).
	Limits map[string]int
	// Models are the model ids GET /v1/models (Gemini: /v1beta/models)
	// lists, before those of Limits; with neither, DefaultModel alone
	// (models.go). Model calls take any model id whatever they list.
	Models []string
	// Cache, when set, is the prompt cache of Anthropic Messages calls
	// (cache.go): their usage says what they read from it and wrote to it.
	Cache *PromptCache
	// Strict: the channel refuses, with its provider's 400, a model call
	// holding reasoning it did not mint, an Anthropic tool id outside
	// ^[a-zA-Z0-9_-]+$ or a tool result without its call (strict.go). Its
	// answers' signatures are its own whether Strict or not.
	Strict bool
	// OpenAIArgs: the channel is OpenAI's own API, which refuses a Chat
	// Completions request argument it does not document (top_k, which
	// vLLM and Ollama take) with a 400 invalid_request_error
	// "Unrecognized request argument supplied: top_k" (strict.go), Strict
	// or not.
	OpenAIArgs bool
	// KimiToolIDs: tool calls without a scripted ID are named as Kimi
	// names them, "functions.NAME:N" (strict.go).
	KimiToolIDs bool

	mu      sync.Mutex
	n       int
	fails   int
	modelN  int // model calls counted for FailFrom
	calls   []Call
	key     []byte // signature key (strict.go)
	toolN   int    // Kimi-style tool calls named so far
	refused int    // model calls a Strict channel refused
	// OnCall, when set, is called with each recorded call (the command
	// writes them as JSON lines).
	OnCall func(Call)
}

// Calls returns the requests received so far.
func (c *Channel) Calls() []Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Call(nil), c.calls...)
}

// modelPath reports whether path is a model call of api, and whether the
// path itself asks for a stream (Gemini).
func modelPath(api, path string) (ok, stream bool) {
	switch api {
	case Anthropic:
		return strings.HasSuffix(path, "/v1/messages"), false
	case Chat:
		return strings.HasSuffix(path, "/chat/completions"), false
	case Responses:
		return strings.HasSuffix(path, "/v1/responses"), false
	case Gemini:
		if i := strings.Index(path, "/v1beta/models/"); i >= 0 {
			switch {
			case strings.HasSuffix(path, ":streamGenerateContent"):
				return true, true
			case strings.HasSuffix(path, ":generateContent"):
				return true, false
			}
		}
	}
	return false, false
}

func (c *Channel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw := readBody(r)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	call := Call{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body, Raw: raw}
	api, ok, stream := c.API, false, false
	if api == All {
		api = apiOfPath(r.URL.Path)
		ok = api != "" && r.Method == http.MethodPost
	} else {
		ok, stream = modelPath(api, r.URL.Path)
	}
	if ok && (c.Strict || c.OpenAIArgs) && r.Method == http.MethodPost && c.refuse(w, api, call) {
		return
	}
	c.mu.Lock()
	turn := Turn{Text: "ok"}
	if ok {
		c.modelN++
	}
	switch {
	case !ok:
	case c.FailFirst < 0 || c.fails < c.FailFirst || (c.FailFrom > 0 && c.modelN >= c.FailFrom):
		c.fails++
		turn = Turn{Status: c.FailStatus}
	case c.Pick != nil && c.Pick(call) != nil:
		turn = *c.Pick(call)
	case len(c.Turns) > 0:
		turn = c.Turns[min(c.n, len(c.Turns)-1)]
		c.n++
	}
	var refused *refusal
	if ok && (turn.Status == 0 || turn.Status == http.StatusOK) {
		if refused = c.screen(api, r.URL.Path, body, &turn); refused != nil {
			turn = Turn{Status: refused.status}
		}
	}
	if ok {
		call.Status = http.StatusOK
		if turn.Status != 0 {
			call.Status = turn.Status
		}
	}
	c.calls = append(c.calls, call)
	hook := c.OnCall
	sign, ids := &signer{key: c.macKey()}, c.toolIDs(turn)
	c.mu.Unlock()
	if hook != nil {
		hook(call)
	}
	if c.API == Gemini && strings.HasSuffix(r.URL.Path, ":countTokens") && r.Method == http.MethodPost {
		writeJSON(w, http.StatusOK, map[string]any{"totalTokens": len(raw) / 4})
		return
	}
	if c.API == All && !ok {
		c.serveSideRoute(w, r, raw)
		return
	}
	if !ok && isModelList(c.API, r) {
		writeJSON(w, http.StatusOK, c.modelList(c.API))
		return
	}
	if !ok || r.Method != http.MethodPost {
		writeJSON(w, http.StatusNotFound, errorDoc(c.API, http.StatusNotFound, "mockllm ("+c.API+"): no route "+r.Method+" "+r.URL.Path))
		return
	}
	if refused != nil {
		writeJSON(w, refused.status, refused.doc)
		return
	}
	if turn.Status != 0 && turn.Status != http.StatusOK {
		writeJSON(w, turn.Status, errorDoc(api, turn.Status, "mock channel failing"))
		return
	}
	if s, _ := body["stream"].(bool); s {
		stream = true
	}
	model, _ := body["model"].(string)
	if c.API == Gemini {
		model = strings.TrimSuffix(strings.TrimSuffix(r.URL.Path[strings.Index(r.URL.Path, "/models/")+8:], ":streamGenerateContent"), ":generateContent")
	}
	a := answer{turn: turn, model: model, usageAsked: usageAsked(body), sign: sign, ids: ids}
	if !stream {
		writeJSON(w, http.StatusOK, a.document(api))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	a.stream(api, &sseWriter{w: w})
}

func usageAsked(body map[string]any) bool {
	so, _ := body["stream_options"].(map[string]any)
	u, _ := so["include_usage"].(bool)
	return u
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// errorDoc is api's error document for status.
func errorDoc(api string, status int, msg string) any {
	switch api {
	case Anthropic:
		typ := map[int]string{400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
			429: "rate_limit_error", 529: "overloaded_error"}[status]
		if typ == "" {
			typ = "api_error"
		}
		return map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
	case Gemini:
		st := map[int]string{400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"}[status]
		if st == "" {
			st = "INTERNAL"
		}
		return map[string]any{"error": map[string]any{"code": status, "message": msg, "status": st}}
	}
	code := map[int]string{400: "invalid_request_error", 401: "invalid_api_key", 404: "model_not_found", 429: "rate_limit_exceeded"}[status]
	if code == "" {
		code = "server_error"
	}
	return map[string]any{"error": map[string]any{"message": msg, "type": code, "param": nil, "code": code}}
}

// sseWriter writes and flushes SSE events.
type sseWriter struct {
	w http.ResponseWriter
}

func (s *sseWriter) event(name string, v any) {
	b, _ := json.Marshal(v)
	s.raw(name, string(b))
}

func (s *sseWriter) raw(name, data string) {
	if name != "" {
		_, _ = io.WriteString(s.w, "event: "+name+"\n")
	}
	_, _ = io.WriteString(s.w, "data: "+data+"\n\n")
	_ = http.NewResponseController(s.w).Flush()
}

// drop cuts the connection without ending the response (net/http's
// documented abort).
func (s *sseWriter) drop() {
	panic(http.ErrAbortHandler)
}
