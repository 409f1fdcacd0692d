package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/testbed/fixtures"
	"github.com/dual-proxy/dual-proxy/internal/testbed/mockllm"
	"github.com/dual-proxy/dual-proxy/pool/api"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// memberAPIs are the APIs the pool sends a call of API client in, one per
// channel api word (api.MemberKind: an `openai` channel takes Chat for
// Anthropic and Gemini clients, so only a Responses client is ever sent
// Responses), without the client's own.
func memberAPIs(client apikind.Kind) []apikind.Kind {
	var out []apikind.Kind
	seen := map[apikind.Kind]bool{client: true}
	for _, ch := range config.ChannelAPIs {
		if k := api.MemberKind(ch, client); !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// targetModel is the member's model id every translation names; its
// declared output limit (the strict mock's Limits) is above every
// recording's, so a limit the translation made up or inflated is refused.
const (
	targetModel = "member-model"
	targetLimit = 128000
)

// anthropicToolID is the alphabet Anthropic demands of tool ids.
var anthropicToolID = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// recordedCall is the model and stream of a recorded call: Gemini names
// them in the path, the other APIs in the body (DecodeRequest ignores the
// arguments for them).
func recordedCall(rec fixtures.AgentRequest) (model string, stream bool) {
	if i := strings.Index(rec.Path, "/models/"); i >= 0 {
		model, method, _ := strings.Cut(rec.Path[i+len("/models/"):], ":")
		return model, method == "streamGenerateContent"
	}
	return "", false
}

// TestAgentRequestsTranslate translates every recorded agent request
// (testdata/agents) into each other API the pool sends it in (memberAPIs)
// and sends it to a strict mock
// member of that API, which refuses what the provider refuses (foreign
// reasoning signatures, tool ids outside Anthropic's alphabet, a tool
// result without its call, thinking missing from an Anthropic tool loop,
// more than four cache breakpoints or one on a thinking block, an output
// limit above the model's or none for Anthropic). On top, what the session
// needs to survive the change of API is checked: every tool call and
// result arrives and pairs up, the output limit is the agent's, the
// agent's cache breakpoints reach an Anthropic member and its
// prompt_cache_key an OpenAI one.
func TestAgentRequestsTranslate(t *testing.T) {
	for _, rec := range fixtures.AgentRequests(t) {
		from := apikind.Kind(rec.API)
		name := strings.TrimSuffix(strings.ReplaceAll(rec.File, "/", "-"), ".json")
		model, stream := recordedCall(rec)
		n, err := api.DecodeRequest(from, rec.Body, model, stream)
		t.Run("POOL-21/"+name+"-decodes", func(t *testing.T) {
			if err != nil {
				t.Fatalf("%s: the %s decoder refuses the request %s sent: %v", rec.File, from, rec.Agent, err)
			}
			if len(n.Messages) == 0 {
				t.Fatalf("%s: decoded to no messages", rec.File)
			}
			if rec.Kind == fixtures.KindToolResult && countParts(n, neutral.KindToolResult) == 0 {
				t.Fatalf("%s: a call after a tool result decoded without one", rec.File)
			}
		})
		if err != nil {
			continue
		}
		for _, to := range memberAPIs(from) {
			t.Run("POOL-21/"+name+"-to-"+string(to), func(t *testing.T) {
				r := *n
				r.Model, r.CacheBreakpoints = targetModel, to == apikind.Anthropic
				body, err := api.EncodeRequest(to, &r)
				if err != nil {
					t.Fatalf("%s as %s: %v", rec.File, to, err)
				}
				t.Run("POOL-21/accepted-by-strict-"+string(to)+"-member", func(t *testing.T) {
					sendStrict(t, to, body, r.Stream)
				})
				t.Run("POOL-21/no-field-"+string(to)+"-does-not-know", func(t *testing.T) {
					checkFields(t, to, body)
				})
				t.Run("POOL-25/tool-calls-and-results-paired-ids-in-"+string(to)+"-alphabet", func(t *testing.T) {
					checkToolPairs(t, to, n, body)
				})
				t.Run("POOL-25/output-limit-the-agent-asked", func(t *testing.T) {
					checkLimit(t, to, n, body)
				})
				t.Run("POOL-24/cache-breakpoints-and-key-carried", func(t *testing.T) {
					checkCache(t, from, to, n, rec.Body)
				})
			})
		}
	}
}

// sendStrict posts body to a strict mock member of API to and fails
// unless it answers 200.
func sendStrict(t *testing.T, to apikind.Kind, body []byte, stream bool) {
	t.Helper()
	ch := &mockllm.Channel{API: string(to), Strict: true, Limits: map[string]int{targetModel: targetLimit}, Cache: &mockllm.PromptCache{}}
	srv := httptest.NewServer(ch)
	defer srv.Close()
	path := api.For(to).UpstreamPath(targetModel, stream)
	resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a strict %s member refuses the translated request: %d %s", to, resp.StatusCode, answer)
	}
}

func countParts(n *neutral.Request, k neutral.Kind) int {
	c := 0
	for _, m := range n.Messages {
		for _, p := range m.Parts {
			if p.Kind == k {
				c++
			}
		}
	}
	return c
}

// toolIDs are the ids of the tool calls and of the tool results in a
// request body of API to, in order (Gemini's calls and results may carry
// none: "").
func toolIDs(t *testing.T, to apikind.Kind, body []byte) (calls, results []string) {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("translated body is not JSON: %v", err)
	}
	str := func(v any) string { s, _ := v.(string); return s }
	list := func(v any) []map[string]any {
		a, _ := v.([]any)
		var out []map[string]any
		for _, e := range a {
			if m, ok := e.(map[string]any); ok {
				out = append(out, m)
			}
		}
		return out
	}
	switch to {
	case apikind.Anthropic:
		for _, m := range list(doc["messages"]) {
			for _, b := range list(m["content"]) {
				switch b["type"] {
				case "tool_use":
					calls = append(calls, str(b["id"]))
				case "tool_result":
					results = append(results, str(b["tool_use_id"]))
				}
			}
		}
	case apikind.Chat:
		for _, m := range list(doc["messages"]) {
			for _, tc := range list(m["tool_calls"]) {
				calls = append(calls, str(tc["id"]))
			}
			if m["role"] == "tool" {
				results = append(results, str(m["tool_call_id"]))
			}
		}
	case apikind.Responses:
		for _, it := range list(doc["input"]) {
			switch it["type"] {
			case "function_call", "custom_tool_call":
				calls = append(calls, str(it["call_id"]))
			case "function_call_output", "custom_tool_call_output":
				results = append(results, str(it["call_id"]))
			}
		}
	case apikind.Gemini:
		for _, c := range list(doc["contents"]) {
			for _, p := range list(c["parts"]) {
				if fc, ok := p["functionCall"].(map[string]any); ok {
					calls = append(calls, str(fc["id"]))
				}
				if fr, ok := p["functionResponse"].(map[string]any); ok {
					results = append(results, str(fr["id"]))
				}
			}
		}
	}
	return calls, results
}

// checkToolPairs: every tool call and result of the agent's request is in
// the translation, each result answers a call before it (by id where the
// API has ids), and Anthropic's ids are in its alphabet.
func checkToolPairs(t *testing.T, to apikind.Kind, n *neutral.Request, body []byte) {
	calls, results := toolIDs(t, to, body)
	if want := countParts(n, neutral.KindToolCall); len(calls) != want {
		t.Fatalf("%d tool calls reached the %s request, the agent sent %d", len(calls), to, want)
	}
	if want := countParts(n, neutral.KindToolResult); len(results) != want {
		t.Fatalf("%d tool results reached the %s request, the agent sent %d", len(results), to, want)
	}
	seen := map[string]bool{}
	for _, id := range calls {
		if to == apikind.Anthropic && !anthropicToolID.MatchString(id) {
			t.Fatalf("tool call id %q outside Anthropic's alphabet %s", id, anthropicToolID)
		}
		seen[id] = true
	}
	for _, id := range results {
		if to == apikind.Gemini && id == "" {
			continue // Gemini pairs a result with its call by name and order
		}
		if !seen[id] {
			t.Fatalf("tool result for %q has no call of that id in the %s request (calls %v)", id, to, calls)
		}
	}
}

// outputLimit is the output limit a request body of API to names, 0 when
// none.
func outputLimit(t *testing.T, to apikind.Kind, body []byte) int {
	var doc struct {
		MaxTokens           int `json:"max_tokens"`
		MaxCompletionTokens int `json:"max_completion_tokens"`
		MaxOutputTokens     int `json:"max_output_tokens"`
		GenerationConfig    struct {
			MaxOutputTokens int `json:"maxOutputTokens"`
		} `json:"generationConfig"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("translated body: %v", err)
	}
	return max(doc.MaxTokens, doc.MaxCompletionTokens, doc.MaxOutputTokens, doc.GenerationConfig.MaxOutputTokens)
}

// checkLimit: the translation asks for the output limit the agent asked
// for; an Anthropic member, which requires one, gets one when the agent
// named none.
func checkLimit(t *testing.T, to apikind.Kind, n *neutral.Request, body []byte) {
	got := outputLimit(t, to, body)
	switch {
	case n.MaxTokens > 0 && got != n.MaxTokens:
		t.Fatalf("output limit %d in the %s request, the agent asked for %d", got, to, n.MaxTokens)
	case n.MaxTokens == 0 && to == apikind.Anthropic && got == 0:
		t.Fatal("an Anthropic request without max_tokens (Anthropic requires it)")
	case n.MaxTokens == 0 && to != apikind.Anthropic && got != 0:
		t.Fatalf("output limit %d made up for a %s request: the agent named none", got, to)
	}
}

// checkCache: the agent's own breakpoints (Anthropic cache_control, a Chat
// part's cache_control) reach an Anthropic member, the latest four of
// them, with the pool's own breakpoints off; its prompt_cache_key reaches
// Chat and Responses members.
func checkCache(t *testing.T, from, to apikind.Kind, n *neutral.Request, sent []byte) {
	r := *n
	r.Model = targetModel
	if to == apikind.Anthropic {
		body, err := api.EncodeRequest(to, &r)
		if err != nil {
			t.Fatal(err)
		}
		if want, got := min(strings.Count(string(sent), `"cache_control"`), 4), strings.Count(string(body), `"cache_control"`); got != want {
			t.Fatalf("%d cache breakpoints in the Anthropic request without the pool's own, the agent set %d (of which at most 4 fit)", got, want)
		}
	}
	if n.CacheKey == "" || (to != apikind.Chat && to != apikind.Responses) {
		return
	}
	body, err := api.EncodeRequest(to, &r)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Key string `json:"prompt_cache_key"`
	}
	if json.Unmarshal(body, &doc) != nil || doc.Key != n.CacheKey {
		t.Fatalf("prompt_cache_key %q in the %s request, the agent sent %q", doc.Key, to, n.CacheKey)
	}
}

// documentedFields are the request body fields each API documents, at the
// top level and in Gemini's generationConfig ("generationConfig.KEY"):
// OpenAI refuses a field it does not know (400 "Unrecognized request
// argument"), Anthropic and Gemini likewise ("Extra inputs are not
// permitted", "Unknown name"). From the providers' API references
// (Anthropic Messages, OpenAI Chat Completions and Responses, Gemini
// generateContent).
var documentedFields = map[apikind.Kind][]string{
	apikind.Anthropic: {"model", "messages", "max_tokens", "system", "metadata", "stop_sequences", "stream",
		"temperature", "top_k", "top_p", "tools", "tool_choice", "thinking", "service_tier", "container",
		"mcp_servers", "context_management", "output_config", "output_format"},
	apikind.Chat: {"model", "messages", "max_tokens", "max_completion_tokens", "stream", "stream_options",
		"temperature", "top_p", "n", "stop", "presence_penalty", "frequency_penalty", "logit_bias", "logprobs",
		"top_logprobs", "user", "tools", "tool_choice", "parallel_tool_calls", "response_format", "seed",
		"reasoning_effort", "prompt_cache_key", "prompt_cache_retention", "safety_identifier", "service_tier",
		"store", "metadata", "modalities", "audio", "prediction", "verbosity", "web_search_options",
		// Not OpenAI's: the OpenAI-compatible servers of `openai-chat`
		// channels (vLLM, Ollama and others) take it, and the Chat
		// encoder writes a client's top_k (Gemini CLI sends topK) for them;
		// a call translated for an `openai` channel goes without it
		// (FitChannel; pool TestSamplingHintsOnOpenAIMembers).
		"top_k"},
	apikind.Responses: {"model", "input", "instructions", "max_output_tokens", "max_tool_calls", "stream",
		"stream_options", "temperature", "top_p", "top_logprobs", "tools", "tool_choice", "parallel_tool_calls",
		"previous_response_id", "conversation", "reasoning", "text", "include", "store", "metadata", "user",
		"prompt", "prompt_cache_key", "prompt_cache_retention", "safety_identifier", "service_tier",
		"truncation", "background"},
	apikind.Gemini: {"contents", "systemInstruction", "tools", "toolConfig", "safetySettings", "generationConfig",
		"cachedContent", "generationConfig.stopSequences", "generationConfig.responseMimeType",
		"generationConfig.responseSchema", "generationConfig.responseJsonSchema", "generationConfig.responseModalities",
		"generationConfig.candidateCount", "generationConfig.maxOutputTokens", "generationConfig.temperature",
		"generationConfig.topP", "generationConfig.topK", "generationConfig.seed", "generationConfig.presencePenalty",
		"generationConfig.frequencyPenalty", "generationConfig.responseLogprobs", "generationConfig.logprobs",
		"generationConfig.thinkingConfig", "generationConfig.speechConfig", "generationConfig.mediaResolution"},
}

// checkFields: the translated body holds only fields its API documents.
func checkFields(t *testing.T, to apikind.Kind, body []byte) {
	known := map[string]bool{}
	for _, f := range documentedFields[to] {
		known[f] = true
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("translated body: %v", err)
	}
	for k, v := range doc {
		if !known[k] {
			t.Errorf("the %s request has a field %s does not document: %q", to, to, k)
		}
		if to == apikind.Gemini && k == "generationConfig" {
			var gc map[string]json.RawMessage
			_ = json.Unmarshal(v, &gc)
			for gk := range gc {
				if !known[k+"."+gk] {
					t.Errorf("the gemini request has a field gemini does not document: %q", k+"."+gk)
				}
			}
		}
	}
}
