package mockllm

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"net/http"
	"sort"
	"strings"
)

// A channel checks reasoning and tool ids the way the providers do, so a
// test sees the 400 a real member would answer:
//
//   - every reasoning signature the channel answers with is its own: a MAC
//     under a key only this Channel holds (an Anthropic thinking block's
//     signature covers its text; a redacted_thinking block's data and a
//     Gemini thoughtSignature are a nonce and its MAC). No other channel,
//     and no other process, can mint one it accepts.
//   - a Strict channel refuses a request holding reasoning it did not
//     mint, as the provider does: Anthropic "messages.N.content.M: Invalid
//     `signature` in `thinking` block" (and an empty signature), Gemini
//     "Corrupted thought signature." (Gemini's documented placeholder
//     skip_thought_signature_validator is accepted); Anthropic tool ids
//     outside ^[a-zA-Z0-9_-]+$ ("String should match pattern"); a tool
//     result with no call of its id in the message before it (Anthropic,
//     Chat) or earlier in the input (Responses); and, with thinking
//     {"type": "enabled"}, a tool loop whose last assistant message does
//     not start with a thinking block.
//   - OpenAIArgs: a Chat channel refuses a request argument OpenAI's
//     Chat Completions reference does not list (openAIChatArgs), as
//     OpenAI's own API does: 400 invalid_request_error "Unrecognized
//     request argument supplied: top_k".
//   - KimiToolIDs: a Chat channel names its tool calls as Kimi does,
//     "functions.NAME:N" (N counting the channel's tool calls from 0).

// skipThoughtSignature is Gemini's documented placeholder for a thought
// signature it cannot verify (Gemini API "Thought signatures").
const skipThoughtSignature = "skip_thought_signature_validator"

// anthropicToolID is the alphabet of Anthropic tool_use ids.
const anthropicToolIDPattern = "^[a-zA-Z0-9_-]+$"

// macKey is the channel's signature key, made on first use. Called with
// c.mu held.
func (c *Channel) macKey() []byte {
	if c.key == nil {
		c.key = make([]byte, 32)
		_, _ = rand.Read(c.key)
	}
	return c.key
}

func mac(key []byte, parts ...string) []byte {
	h := hmac.New(sha256.New, key)
	for _, p := range parts {
		_, _ = h.Write([]byte(p))
		_, _ = h.Write([]byte{0})
	}
	return h.Sum(nil)[:24]
}

// signer mints the channel's signatures for one answer. Called with c.mu
// held; the answer is rendered after the lock is released, so it gets the
// key, not the channel.
type signer struct {
	key []byte
	n   uint64 // nonce counter, per answer: a nonce only needs to differ
}

// thinking is the signature of an Anthropic thinking block of text.
func (s *signer) thinking(text string) string {
	if s == nil {
		return "mock-sig"
	}
	return base64.StdEncoding.EncodeToString(mac(s.key, "thinking", text))
}

// token is a nonce and its MAC: a redacted_thinking block's data or a
// Gemini thoughtSignature.
func (s *signer) token(kind string) string {
	if s == nil {
		return "mock-" + kind
	}
	var nonce [16]byte
	_, _ = rand.Read(nonce[:8])
	s.n++
	binary.BigEndian.PutUint64(nonce[8:], s.n)
	n := base64.RawURLEncoding.EncodeToString(nonce[:])
	return n + "." + base64.RawURLEncoding.EncodeToString(mac(s.key, kind, n))
}

// validToken reports whether tok is a token of kind this key minted.
func validToken(key []byte, kind, tok string) bool {
	n, m, ok := strings.Cut(tok, ".")
	if !ok {
		return false
	}
	want := base64.RawURLEncoding.EncodeToString(mac(key, kind, n))
	return hmac.Equal([]byte(m), []byte(want))
}

// toolIDs are the ids of a turn's tool calls: the scripted ones, else
// Kimi-style or call_mock_N. Called with c.mu held.
func (c *Channel) toolIDs(t Turn) []string {
	ids := make([]string, len(t.ToolCalls))
	for i, tc := range t.ToolCalls {
		switch {
		case tc.ID != "":
			ids[i] = tc.ID
		case c.KimiToolIDs:
			ids[i] = fmt.Sprintf("functions.%s:%d", tc.Name, c.toolN)
			c.toolN++
		default:
			ids[i] = fmt.Sprintf("call_mock_%d", i+1)
		}
	}
	return ids
}

// openAIChatArgs are the request arguments OpenAI's Chat Completions
// reference ("Create chat completion") lists; OpenAI's API refuses any
// other.
var openAIChatArgs = map[string]bool{"messages": true, "model": true, "audio": true, "frequency_penalty": true,
	"function_call": true, "functions": true, "logit_bias": true, "logprobs": true, "max_completion_tokens": true,
	"max_tokens": true, "metadata": true, "modalities": true, "n": true, "parallel_tool_calls": true,
	"prediction": true, "presence_penalty": true, "prompt_cache_key": true, "prompt_cache_retention": true,
	"reasoning_effort": true, "response_format": true, "safety_identifier": true, "seed": true,
	"service_tier": true, "stop": true, "store": true, "stream": true, "stream_options": true,
	"temperature": true, "tool_choice": true, "tools": true, "top_logprobs": true, "top_p": true, "user": true,
	"verbosity": true, "web_search_options": true}

// openAIArgRefusal is OpenAI's 400 message for a Chat request naming an
// argument its API does not know (the first in sorted order), or "".
func openAIArgRefusal(body map[string]any) string {
	var unknown []string
	for k := range body {
		if !openAIChatArgs[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return ""
	}
	sort.Strings(unknown)
	return "Unrecognized request argument supplied: " + unknown[0]
}

// strictRefusal is the provider's 400 for a request a Strict or OpenAIArgs
// channel refuses: its message, in the API's error document.
func (c *Channel) strictRefusal(api string, body map[string]any) string {
	if c.OpenAIArgs && api == Chat {
		if msg := openAIArgRefusal(body); msg != "" {
			return msg
		}
	}
	if !c.Strict {
		return ""
	}
	c.mu.Lock()
	key := c.macKey()
	c.mu.Unlock()
	switch api {
	case Anthropic:
		return anthropicRefusal(key, body)
	case Gemini:
		return geminiRefusal(key, body)
	case Chat:
		return chatRefusal(body)
	case Responses:
		return responsesRefusal(body)
	}
	return ""
}

// refuse answers a refused model call: the call recorded with status 400
// and the API's error document. It reports whether it answered.
func (c *Channel) refuse(w http.ResponseWriter, api string, call Call) bool {
	msg := c.strictRefusal(api, call.Body)
	if msg == "" {
		return false
	}
	call.Status = http.StatusBadRequest
	c.mu.Lock()
	c.calls = append(c.calls, call)
	c.refused++
	hook := c.OnCall
	c.mu.Unlock()
	if hook != nil {
		hook(call)
	}
	writeJSON(w, http.StatusBadRequest, errorDoc(api, http.StatusBadRequest, msg))
	return true
}

// Refused is the number of model calls a Strict or OpenAIArgs channel
// refused.
func (c *Channel) Refused() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.refused
}

func validAnthropicToolID(id string) bool {
	if id == "" {
		return false
	}
	for i := 0; i < len(id); i++ {
		b := id[i]
		if !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b == '-') {
			return false
		}
	}
	return true
}

func blocks(m any) (role string, content []map[string]any) {
	mm, _ := m.(map[string]any)
	role, _ = mm["role"].(string)
	switch v := mm["content"].(type) {
	case []any:
		for _, b := range v {
			if bm, ok := b.(map[string]any); ok {
				content = append(content, bm)
			}
		}
	case string:
		content = []map[string]any{{"type": "text", "text": v}}
	}
	return role, content
}

func anthropicRefusal(key []byte, body map[string]any) string {
	msgs, _ := body["messages"].([]any)
	var prevCalls map[string]bool // tool_use ids of the message before
	for i, m := range msgs {
		role, content := blocks(m)
		calls := map[string]bool{}
		for j, b := range content {
			typ, _ := b["type"].(string)
			switch typ {
			case "thinking":
				text, _ := b["thinking"].(string)
				sig, _ := b["signature"].(string)
				if role != "assistant" || sig == "" || !hmac.Equal([]byte(sig), []byte(base64.StdEncoding.EncodeToString(mac(key, "thinking", text)))) {
					return fmt.Sprintf("messages.%d.content.%d: Invalid `signature` in `thinking` block", i, j)
				}
			case "redacted_thinking":
				data, _ := b["data"].(string)
				if !validToken(key, "redacted_thinking", data) {
					return fmt.Sprintf("messages.%d.content.%d: Invalid `data` in `redacted_thinking` block", i, j)
				}
			case "tool_use":
				id, _ := b["id"].(string)
				if !validAnthropicToolID(id) {
					return fmt.Sprintf("messages.%d.content.%d.tool_use.id: String should match pattern '%s'", i, j, anthropicToolIDPattern)
				}
				calls[id] = true
			case "tool_result":
				id, _ := b["tool_use_id"].(string)
				if !validAnthropicToolID(id) {
					return fmt.Sprintf("messages.%d.content.%d.tool_result.tool_use_id: String should match pattern '%s'", i, j, anthropicToolIDPattern)
				}
				if !prevCalls[id] {
					return fmt.Sprintf("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, j, id)
				}
			}
		}
		prevCalls = calls
	}
	return anthropicThinkingRefusal(body, msgs)
}

// anthropicThinkingRefusal: with thinking {"type": "enabled"}, a request
// that continues a tool loop (its last message holds tool results) must
// have a last assistant message that starts with a thinking block.
func anthropicThinkingRefusal(body map[string]any, msgs []any) string {
	th, _ := body["thinking"].(map[string]any)
	if typ, _ := th["type"].(string); typ != "enabled" || len(msgs) < 2 {
		return ""
	}
	role, last := blocks(msgs[len(msgs)-1])
	if role != "user" || len(last) == 0 || last[0]["type"] != "tool_result" {
		return ""
	}
	i := len(msgs) - 2
	role, prev := blocks(msgs[i])
	if role != "assistant" || len(prev) == 0 {
		return ""
	}
	if t, _ := prev[0]["type"].(string); t != "thinking" && t != "redacted_thinking" {
		return fmt.Sprintf("messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%s`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`.", i, t)
	}
	return ""
}

func geminiRefusal(key []byte, body map[string]any) string {
	contents, _ := body["contents"].([]any)
	for _, c := range contents {
		cm, _ := c.(map[string]any)
		parts, _ := cm["parts"].([]any)
		for _, p := range parts {
			pm, _ := p.(map[string]any)
			sig, ok := pm["thoughtSignature"].(string)
			if ok && sig != skipThoughtSignature && !validToken(key, "thoughtSignature", sig) {
				return "Corrupted thought signature."
			}
		}
	}
	return ""
}

func chatRefusal(body map[string]any) string {
	msgs, _ := body["messages"].([]any)
	var calls map[string]bool // the tool calls of the last assistant message
	for i, m := range msgs {
		mm, _ := m.(map[string]any)
		switch mm["role"] {
		case "assistant":
			calls = map[string]bool{}
			tcs, _ := mm["tool_calls"].([]any)
			for _, tc := range tcs {
				tm, _ := tc.(map[string]any)
				id, _ := tm["id"].(string)
				calls[id] = true
			}
		case "tool":
			id, _ := mm["tool_call_id"].(string)
			if !calls[id] {
				return fmt.Sprintf("Invalid parameter: messages[%d]: messages with role 'tool' must be a response to a preceeding message with 'tool_calls' (tool_call_id %q).", i, id)
			}
		}
	}
	return ""
}

func responsesRefusal(body map[string]any) string {
	items, _ := body["input"].([]any)
	calls := map[string]bool{}
	for _, it := range items {
		im, _ := it.(map[string]any)
		id, _ := im["call_id"].(string)
		switch im["type"] {
		case "function_call", "custom_tool_call":
			calls[id] = true
		case "function_call_output", "custom_tool_call_output":
			if !calls[id] {
				return fmt.Sprintf("No tool call found for function call output with call_id %s.", id)
			}
		}
	}
	return ""
}
