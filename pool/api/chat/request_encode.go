package chat

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

// encodeChatRequest writes r as a Chat Completions request. Tool results
// become "tool" messages before the rest of their user turn; a result marked
// as an error gets an "Error: " prefix (Chat has no error flag). Reasoning
// text goes to reasoning_content (DeepSeek, Kimi, vLLM read it back);
// signatures and encrypted reasoning are dropped. A stream asks for usage
// (stream_options.include_usage) so cache accounting keeps working.
// prompt_cache_key is kept; cache_control breakpoints are dropped (OpenAI
// caches prefixes by itself and refuses fields it does not know).
func encodeChatRequest(r *neutral.Request) ([]byte, error) {
	return wirefmt.EncodeHeld(func(h *wirefmt.HeldStrings) (any, error) { return ChatRequestOut(r, h) })
}

// ChatRequestOut is the Chat request encodeChatRequest marshals, with the
// long strings held in h (held.go).
func ChatRequestOut(r *neutral.Request, h *wirefmt.HeldStrings) (*chatRequestT[chatMessageOut], error) {
	w := &chatRequestT[chatMessageOut]{Model: r.Model, Stream: r.Stream, MaxTokens: r.MaxTokens, Temperature: r.Temperature,
		TopP: r.TopP, TopK: r.TopK, ParallelToolCalls: r.ParallelToolCalls, User: r.User, PromptCacheKey: r.CacheKey}
	if r.Stream {
		w.StreamOptions = &struct {
			IncludeUsage bool `json:"include_usage"`
		}{true}
	}
	if len(r.Stop) > 0 {
		w.Stop = wirefmt.MustJSON(r.Stop)
	}
	if len(r.System) > 0 {
		w.Messages = append(w.Messages, chatMessageOut{Role: "system", Content: h.Str(strings.Join(r.System, "\n\n"))})
	}
	for i, m := range r.Messages {
		msgs, err := encodeChatMessage(fmt.Sprintf("messages[%d]", i), m, h)
		if err != nil {
			return nil, err
		}
		w.Messages = append(w.Messages, msgs...)
	}
	for _, t := range r.Tools {
		var ct chatTool
		ct.Type = "function"
		ct.Function.Name, ct.Function.Description, ct.Function.Parameters, ct.Function.Strict = t.Name, t.Description, t.Schema, t.Strict
		w.Tools = append(w.Tools, ct)
	}
	switch r.ToolChoice.Mode {
	case neutral.ChoiceAuto, neutral.ChoiceNone, neutral.ChoiceRequired:
		w.ToolChoice = wirefmt.MustJSON(string(r.ToolChoice.Mode))
	case neutral.ChoiceTool:
		w.ToolChoice = wirefmt.MustJSON(map[string]any{"type": "function", "function": map[string]string{"name": r.ToolChoice.Name}})
	}
	w.ReasoningEffort = OpenAIEffort(r.Reasoning, ChatEfforts)
	if f := r.Format; f != nil {
		w.ResponseFormat = &chatFormat{Type: f.Type}
		if f.Type == "json_schema" {
			name := f.Name
			if name == "" {
				name = "output"
			}
			w.ResponseFormat.JSONSchema = &struct {
				Name   string          `json:"name,omitempty"`
				Schema json.RawMessage `json:"schema,omitempty"`
				Strict bool            `json:"strict,omitempty"`
			}{name, f.Schema, f.Strict}
		}
	}
	return w, nil
}

// OpenAIEffort maps the neutral reasoning request onto OpenAI's effort
// words: an effort to the nearest allowed value, a budget to the effort it
// stands for; an explicit "disabled" without effort is left to the default
// (many OpenAI-compatible servers refuse "none").
func OpenAIEffort(re neutral.Reasoning, allowed []string) string {
	switch {
	case re.Effort != "":
		return neutral.NearestEffort(re.Effort, allowed)
	case re.Budget > 0:
		return neutral.NearestEffort(neutral.BudgetEffort(re.Budget), allowed)
	}
	return ""
}

func encodeChatMessage(field string, m neutral.Message, h *wirefmt.HeldStrings) ([]chatMessageOut, error) {
	var out []chatMessageOut
	var content []chatContentPart
	msg := chatMessageOut{Role: string(m.Role)}
	var reasoning strings.Builder
	for j, p := range m.Parts {
		pf := fmt.Sprintf("%s.content[%d]", field, j)
		switch p.Kind {
		case neutral.KindText:
			content = append(content, chatContentPart{Type: "text", Text: p.Text})
		case neutral.KindImage:
			if m.Role == neutral.RoleAssistant {
				return nil, neutral.FieldErr(pf, "images in assistant turns are not expressible in Chat Completions")
			}
			cp := chatContentPart{Type: "image_url"}
			cp.ImageURL = &struct {
				URL    string `json:"url"`
				Detail string `json:"detail,omitempty"`
			}{URL: h.Str(neutral.ImageURL(p))}
			content = append(content, cp)
		case neutral.KindToolCall:
			var tc chatToolCall
			tc.ID, tc.Type, tc.Function.Name, tc.Function.Arguments = p.CallID, "function", p.Name, h.Str(neutral.ArgsOrEmpty(p.Args))
			msg.ToolCalls = append(msg.ToolCalls, tc)
		case neutral.KindToolResult:
			text, err := neutral.TextOnly(pf+".content", p.Content)
			if err != nil {
				return nil, neutral.FieldErr(pf+".content", "tool results with images are not expressible in Chat Completions")
			}
			if p.IsError && !strings.HasPrefix(strings.ToLower(text), "error") {
				text = "Error: " + text
			}
			out = append(out, chatMessageOut{Role: "tool", ToolCallID: p.CallID, Content: h.Str(text)})
		case neutral.KindReasoning:
			reasoning.WriteString(p.Text)
		}
	}
	if reasoning.Len() > 0 && m.Role == neutral.RoleAssistant {
		rc := h.Str(reasoning.String())
		msg.ReasoningContent = &rc
	}
	keep := true
	switch {
	case len(content) == 1 && content[0].Type == "text":
		msg.Content = h.Str(content[0].Text)
	case len(content) > 0 && m.Role == neutral.RoleAssistant:
		text, _ := neutral.TextOnly(field, chatPartsNeutral(content))
		msg.Content = h.Str(text)
	case len(content) > 0:
		for i := range content {
			content[i].Text = h.Str(content[i].Text)
		}
		msg.Content = content
	case m.Role == neutral.RoleAssistant:
		keep = len(msg.ToolCalls) > 0 // content null
	default:
		keep = false
	}
	if keep {
		out = append(out, msg)
	}
	return out, nil
}

func chatPartsNeutral(cs []chatContentPart) []neutral.Part {
	out := make([]neutral.Part, len(cs))
	for i, c := range cs {
		out[i] = neutral.Part{Kind: neutral.KindText, Text: c.Text}
	}
	return out
}
