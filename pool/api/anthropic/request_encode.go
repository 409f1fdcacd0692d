package anthropic

import (
	"encoding/json"
	"fmt"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

// encodeAnthropicRequest writes r as a Messages request. Reasoning parts
// without an Anthropic signature (from other APIs) are dropped: Anthropic
// accepts only its own signed thinking. A Request without MaxTokens gets
// defaultMaxTokens. Consecutive messages of one role are merged, tool results
// first (Anthropic's rule for user turns that answer tool calls). The
// client's cache breakpoints are kept, and with r.CacheBreakpoints the
// pool's own are added, at most four in all (placeBreakpoints).
func encodeAnthropicRequest(r *neutral.Request) ([]byte, error) {
	return wirefmt.EncodeHeld(func(h *wirefmt.HeldStrings) (any, error) { return AnthropicRequestOut(r, h) })
}

// AnthropicRequestOut is the Messages request encodeAnthropicRequest
// marshals, with the long strings held in h (held.go).
func AnthropicRequestOut(r *neutral.Request, h *wirefmt.HeldStrings) (*anRequestOut, error) {
	w := &anRequestOut{Model: r.Model, Stream: r.Stream, MaxTokens: r.MaxTokens, Temperature: r.Temperature,
		TopP: r.TopP, TopK: r.TopK, StopSequences: r.Stop}
	if w.MaxTokens == 0 {
		w.MaxTokens = defaultMaxTokens
	}
	if r.User != "" {
		w.Metadata = &anMetadata{UserID: r.User}
	}
	msgs, err := encodeAnMessages(r.Messages, h)
	if err != nil {
		return nil, err
	}
	w.Messages = msgs
	for _, t := range r.Tools {
		schema := t.Schema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		w.Tools = append(w.Tools, anTool{Name: t.Name, Description: t.Description, InputSchema: schema, Strict: t.Strict,
			CacheControl: neutral.AnCacheOf(t.Cache)})
	}
	placeBreakpoints(r, w, h) // also writes the system prompt (anthropic_cache.go)
	if err := encodeAnToolChoice(r, w); err != nil {
		return nil, err
	}
	encodeAnReasoning(r, w)
	if f := r.Format; f != nil {
		if f.Type != "json_schema" {
			return nil, neutral.FieldErr("response_format.type", "%q has no Anthropic equivalent (json_schema only)", f.Type)
		}
		if w.OutputConfig == nil {
			w.OutputConfig = &anOutputConfig{}
		}
		w.OutputConfig.Format = &anFormat{Type: "json_schema", Schema: f.Schema}
	}
	return w, nil
}

// anRequestOut is an encoded Messages request.
type anRequestOut = anRequestT[any, anMessageOut]

func encodeAnToolChoice(r *neutral.Request, w *anRequestOut) error {
	tc := &anToolChoice{}
	switch r.ToolChoice.Mode {
	case neutral.ChoiceDefault:
		tc.Type = "auto"
	case neutral.ChoiceAuto, neutral.ChoiceNone:
		tc.Type = string(r.ToolChoice.Mode)
	case neutral.ChoiceRequired:
		tc.Type = "any"
	case neutral.ChoiceTool:
		tc.Type, tc.Name = "tool", r.ToolChoice.Name
	}
	if r.ParallelToolCalls != nil && !*r.ParallelToolCalls {
		tc.DisableParallelToolUse = true
	}
	if r.ToolChoice.Mode != neutral.ChoiceDefault || tc.DisableParallelToolUse {
		if len(r.Tools) == 0 && tc.Type != "none" && tc.Type != "auto" {
			return neutral.FieldErr("tool_choice", "names a tool but the request has no tools")
		}
		w.ToolChoice = tc
	}
	return nil
}

// encodeAnReasoning sets a thinking budget only: output_config.effort is
// refused by Anthropic models older than Opus 4.5, while budget_tokens works
// on every thinking model and on Anthropic-compatible servers.
func encodeAnReasoning(r *neutral.Request, w *anRequestOut) {
	re := r.Reasoning
	switch {
	case re.Disabled || re.Effort == "none":
		w.Thinking = &anThinking{Type: "disabled"}
		return
	case re.Budget > 0:
		w.Thinking = &anThinking{Type: "enabled", BudgetTokens: re.Budget}
	case re.Effort != "":
		w.Thinking = &anThinking{Type: "enabled", BudgetTokens: neutral.EffortBudget[re.Effort]}
	}
	if w.Thinking != nil && w.Thinking.BudgetTokens >= w.MaxTokens {
		// budget_tokens must stay below max_tokens (Anthropic "Extended thinking").
		w.Thinking.BudgetTokens = w.MaxTokens - 1
		if w.Thinking.BudgetTokens < 1024 {
			w.Thinking = nil
		}
	}
	if w.Thinking != nil && w.Thinking.Type == "enabled" && toolLoopUnsigned(w.Messages) {
		// With thinking enabled, the assistant message of a tool loop in
		// progress must start with its signed thinking block, which no
		// other API carries: that call goes without thinking.
		w.Thinking = &anThinking{Type: "disabled"}
	}
}

// toolLoopUnsigned reports a request continuing a tool loop (its last
// message starts with tool results) whose last assistant message does not
// start with a thinking or redacted_thinking block.
func toolLoopUnsigned(msgs []anMessageOut) bool {
	n := len(msgs)
	if n < 2 || msgs[n-1].Role != "user" || len(msgs[n-1].Content) == 0 || msgs[n-1].Content[0].Type != "tool_result" {
		return false
	}
	a := msgs[n-2]
	if a.Role != "assistant" || len(a.Content) == 0 {
		return false
	}
	t := a.Content[0].Type
	return t != "thinking" && t != "redacted_thinking"
}

func encodeAnMessages(msgs []neutral.Message, h *wirefmt.HeldStrings) ([]anMessageOut, error) {
	var out []anMessageOut
	var blocks []anBlock
	role := ""
	flush := func() {
		if len(blocks) > 0 {
			out = append(out, anMessageOut{Role: role, Content: blocks})
		}
		blocks = nil
	}
	for i, m := range msgs {
		if string(m.Role) != role {
			flush()
			role = string(m.Role)
		}
		var results, rest []anBlock
		for j, p := range m.Parts {
			b, ok, err := encodeAnPart(fmt.Sprintf("messages[%d].content[%d]", i, j), p, h)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			if p.Kind == neutral.KindToolResult {
				results = append(results, b)
			} else {
				rest = append(rest, b)
			}
		}
		if len(results) > 0 && len(blocks) > 0 && blocks[len(blocks)-1].Type != "tool_result" {
			// Results must come first in the user turn: start a new one.
			flush()
		}
		blocks = append(blocks, results...)
		blocks = append(blocks, rest...)
	}
	flush()
	return out, nil
}

// encodeAnPart renders one part; ok is false for a part dropped on purpose.
// Long strings go to h (nil: none held).
func encodeAnPart(field string, p neutral.Part, h *wirefmt.HeldStrings) (anBlock, bool, error) {
	switch p.Kind {
	case neutral.KindText:
		if p.Text == "" {
			return anBlock{}, false, nil
		}
		return anBlock{Type: "text", Text: h.Str(p.Text), CacheControl: neutral.AnCacheOf(p.Cache)}, true, nil
	case neutral.KindImage:
		if p.URL != "" {
			return anBlock{Type: "image", Source: &anSource{Type: "url", URL: p.URL}, CacheControl: neutral.AnCacheOf(p.Cache)}, true, nil
		}
		return anBlock{Type: "image", Source: &anSource{Type: "base64", MediaType: p.MediaType, Data: h.Str(p.Data)},
			CacheControl: neutral.AnCacheOf(p.Cache)}, true, nil
	case neutral.KindToolCall:
		in, err := neutral.RawArgs(field+".input", p.Args)
		return anBlock{Type: "tool_use", ID: anthropicToolID(p.CallID), Name: p.Name, Input: in, CacheControl: neutral.AnCacheOf(p.Cache)}, err == nil, err
	case neutral.KindToolResult:
		var inner []anBlock
		for k, c := range p.Content {
			b, ok, err := encodeAnPart(fmt.Sprintf("%s.content[%d]", field, k), c, h)
			if err != nil {
				return anBlock{}, false, err
			}
			if ok {
				inner = append(inner, b)
			}
		}
		b := anBlock{Type: "tool_result", ToolUseID: anthropicToolID(p.CallID), IsError: p.IsError, CacheControl: neutral.AnCacheOf(p.Cache)}
		if len(inner) > 0 {
			b.Content = wirefmt.MustJSON(inner)
		}
		return b, true, nil
	case neutral.KindReasoning:
		if p.Redacted != "" {
			return anBlock{Type: "redacted_thinking", Data: p.Redacted}, true, nil
		}
		if p.Signature == "" {
			return anBlock{}, false, nil
		}
		text, sig := h.Str(p.Text), p.Signature
		return anBlock{Type: "thinking", Thinking: &text, Signature: &sig}, true, nil
	}
	return anBlock{}, false, neutral.FieldErr(field, "unknown part kind")
}
