package responses

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dual-proxy/dual-proxy/pool/api/chat"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

// OpenAI Responses request wire types (platform.openai.com "Create a
// model response").
type rsRequest struct {
	Model             string          `json:"model"`
	Input             json.RawMessage `json:"input,omitempty"`
	Instructions      string          `json:"instructions,omitempty"`
	Tools             []rsTool        `json:"tools,omitempty"`
	ToolChoice        json.RawMessage `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls,omitempty"`
	MaxOutputTokens   int             `json:"max_output_tokens,omitempty"`
	Temperature       *float64        `json:"temperature,omitempty"`
	TopP              *float64        `json:"top_p,omitempty"`
	Stream            bool            `json:"stream,omitempty"`
	Reasoning         *rsReasoning    `json:"reasoning,omitempty"`
	Text              *rsText         `json:"text,omitempty"`
	User              string          `json:"user,omitempty"`
	PromptCacheKey    string          `json:"prompt_cache_key,omitempty"`
}

type rsReasoning struct {
	Effort  string `json:"effort,omitempty"`
	Summary string `json:"summary,omitempty"`
}

type rsText struct {
	Format *struct {
		Type   string          `json:"type"`
		Name   string          `json:"name,omitempty"`
		Schema json.RawMessage `json:"schema,omitempty"`
		Strict bool            `json:"strict,omitempty"`
	} `json:"format,omitempty"`
}

type rsTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      bool            `json:"strict,omitempty"`
	// Tools of a "namespace" tool (Codex groups its tools so).
	Tools []rsTool `json:"tools,omitempty"`
}

// rsItem is the union of input and output items.
type rsItem struct {
	Type             string          `json:"type,omitempty"`
	ID               string          `json:"id,omitempty"`
	Status           string          `json:"status,omitempty"`
	Role             string          `json:"role,omitempty"`
	Content          json.RawMessage `json:"content,omitempty"`
	CallID           string          `json:"call_id,omitempty"`
	Name             string          `json:"name,omitempty"`
	Arguments        *string         `json:"arguments,omitempty"`
	Output           json.RawMessage `json:"output,omitempty"`
	Summary          *[]rsContent    `json:"summary,omitempty"` // set (maybe empty) on reasoning items
	Tools            []rsTool        `json:"tools,omitempty"`   // an additional_tools item (Codex)
	Input            string          `json:"input,omitempty"`   // a custom_tool_call's freeform input
	EncryptedContent string          `json:"encrypted_content,omitempty"`
}

type rsContent struct {
	Type        string `json:"type"`
	Text        string `json:"text,omitempty"`
	Refusal     string `json:"refusal,omitempty"`
	ImageURL    string `json:"image_url,omitempty"`
	Detail      string `json:"detail,omitempty"`
	Annotations *[]any `json:"annotations,omitempty"` // set (empty) on output text
}

var (
	rsKnownKeys = []string{"model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls",
		"max_output_tokens", "temperature", "top_p", "stream", "reasoning", "text", "user", "prompt_cache_key"}
	// Dropped on translation: storage, cache retention and routing hints,
	// and "include" (what extra fields to return; the target returns its own).
	rsIgnoredKeys = []string{"store", "include", "metadata", "service_tier", "truncation",
		"safety_identifier", "prompt_cache_retention", "stream_options", "client_metadata"}
)

// decodeRequest reads a Responses request body; valid says body is known to
// be valid JSON (ParseRequest accepted it), so it is decoded by one scan.
// previous_response_id, conversation, background and built-in tools
// (web_search, local_shell…) are FieldErrors: no other API can hold
// their state or run them (freeform "custom" tools become functions: see
// addRsTools). Reasoning items keep their encrypted_content and
// id for a Responses member.
func decodeRequest(body []byte, valid bool) (*neutral.Request, error) {
	var w rsRequest
	if err := neutral.ObjectKeys(body, &w, scanRsRequest, rsKnownKeys, rsIgnoredKeys, valid); err != nil {
		return nil, err
	}
	r := &neutral.Request{Model: w.Model, Stream: w.Stream, MaxTokens: w.MaxOutputTokens, Temperature: w.Temperature,
		TopP: w.TopP, ParallelToolCalls: w.ParallelToolCalls, User: w.User, CacheKey: w.PromptCacheKey}
	if w.Instructions != "" {
		r.System = []string{w.Instructions}
	}
	var items []rsItem
	s, isStr, err := neutral.StringOrArray(w.Input, "input", &items, scanRsItem)
	if err != nil {
		return nil, err
	}
	if isStr {
		r.Messages = []neutral.Message{{Role: neutral.RoleUser, Parts: []neutral.Part{{Kind: neutral.KindText, Text: s}}}}
	}
	if err := decodeRsItems(items, r); err != nil {
		return nil, err
	}
	if err := addRsTools("tools", w.Tools, r); err != nil {
		return nil, err
	}
	if r.ToolChoice, err = chat.DecodeOpenAIToolChoice(w.ToolChoice, false); err != nil {
		return nil, err
	}
	if w.Reasoning != nil && w.Reasoning.Effort != "" {
		if neutral.EffortRank(w.Reasoning.Effort) < 0 {
			return nil, neutral.FieldErr("reasoning.effort", "unknown value %q", w.Reasoning.Effort)
		}
		r.Reasoning.Effort = w.Reasoning.Effort
	}
	if w.Text != nil && w.Text.Format != nil {
		switch f := w.Text.Format; f.Type {
		case "text":
		case "json_object":
			r.Format = &neutral.Format{Type: "json_object"}
		case "json_schema":
			r.Format = &neutral.Format{Type: "json_schema", Name: f.Name, Schema: f.Schema, Strict: f.Strict}
		default:
			return nil, neutral.FieldErr("text.format.type", "unknown value %q", f.Type)
		}
	}
	return r, nil
}

func decodeRsItems(items []rsItem, r *neutral.Request) error {
	names := map[string]string{}
	for i, it := range items {
		field := fmt.Sprintf("input[%d]", i)
		typ := it.Type
		if typ == "" && it.Role != "" {
			typ = "message"
		}
		switch typ {
		case "message":
			if err := decodeRsMessage(field, it, r); err != nil {
				return err
			}
		case "function_call":
			args := ""
			if it.Arguments != nil {
				args = *it.Arguments
			}
			names[it.CallID] = it.Name
			r.Messages = neutral.AppendMessage(r.Messages, neutral.Message{Role: neutral.RoleAssistant, Parts: []neutral.Part{
				{Kind: neutral.KindToolCall, CallID: it.CallID, Name: it.Name, Args: neutral.ArgsOrEmpty(args)}}})
		case "custom_tool_call":
			names[it.CallID] = it.Name
			r.Messages = neutral.AppendMessage(r.Messages, neutral.Message{Role: neutral.RoleAssistant, Parts: []neutral.Part{
				{Kind: neutral.KindToolCall, CallID: it.CallID, Name: it.Name, Args: string(wirefmt.MustJSON(map[string]string{"input": it.Input}))}}})
		case "function_call_output", "custom_tool_call_output":
			content, err := decodeRsContent(field+".output", it.Output)
			if err != nil {
				return err
			}
			r.Messages = neutral.AppendMessage(r.Messages, neutral.Message{Role: neutral.RoleUser, Parts: []neutral.Part{
				{Kind: neutral.KindToolResult, CallID: it.CallID, Name: names[it.CallID], Content: content}}})
		case "additional_tools":
			if err := addRsTools(field+".tools", it.Tools, r); err != nil {
				return err
			}
		case "reasoning":
			var text []string
			for _, s := range deref(it.Summary) {
				text = append(text, s.Text)
			}
			r.Messages = neutral.AppendMessage(r.Messages, neutral.Message{Role: neutral.RoleAssistant, Parts: []neutral.Part{
				{Kind: neutral.KindReasoning, Text: strings.Join(text, "\n\n"), Encrypted: it.EncryptedContent, ItemID: it.ID}}})
		default:
			return neutral.FieldErr(field+".type", "item %q is not translatable", it.Type)
		}
	}
	return nil
}

func decodeRsMessage(field string, it rsItem, r *neutral.Request) error {
	content, err := decodeRsContent(field+".content", it.Content)
	if err != nil {
		return err
	}
	switch it.Role {
	case "system", "developer":
		text, err := neutral.TextOnly(field+".content", content)
		if err != nil {
			return err
		}
		r.System = append(r.System, text)
	case "user", "assistant":
		r.Messages = neutral.AppendMessage(r.Messages, neutral.Message{Role: neutral.Role(it.Role), Parts: content})
	default:
		return neutral.FieldErr(field+".role", "unknown role %q", it.Role)
	}
	return nil
}

func decodeRsContent(field string, raw json.RawMessage) ([]neutral.Part, error) {
	var cs []rsContent
	s, isStr, err := neutral.StringOrArray(raw, field, &cs, scanRsContent)
	if err != nil {
		return nil, err
	}
	if isStr {
		return []neutral.Part{{Kind: neutral.KindText, Text: s}}, nil
	}
	var out []neutral.Part
	for j, c := range cs {
		switch c.Type {
		case "input_text", "output_text", "text", "summary_text":
			out = append(out, neutral.Part{Kind: neutral.KindText, Text: c.Text})
		case "refusal":
			out = append(out, neutral.Part{Kind: neutral.KindText, Text: c.Refusal})
		case "input_image":
			if c.ImageURL == "" {
				return nil, neutral.FieldErr(fmt.Sprintf("%s[%d].image_url", field, j), "only image_url images are translatable (not file_id)")
			}
			out = append(out, neutral.ImageFromURL(c.ImageURL))
		default:
			return nil, neutral.FieldErr(fmt.Sprintf("%s[%d].type", field, j), "content %q is not translatable", c.Type)
		}
	}
	return out, nil
}

// encodeResponsesRequest writes r as a Responses request. Reasoning parts
// without encrypted_content (from other APIs) are dropped: Responses only
// takes back its own reasoning items. A tool result marked as an error gets
// an "Error: " prefix (Responses has no error flag). When thinking is asked
// for, reasoning.summary is "auto" so the reasoning text comes back.
// prompt_cache_key is kept (SPEC POOL-24).
func encodeResponsesRequest(r *neutral.Request) ([]byte, error) {
	w := rsRequest{Model: r.Model, Stream: r.Stream, MaxOutputTokens: r.MaxTokens, Temperature: r.Temperature,
		TopP: r.TopP, ParallelToolCalls: r.ParallelToolCalls, User: r.User, Instructions: strings.Join(r.System, "\n\n"),
		PromptCacheKey: r.CacheKey}
	if r.TopK != nil {
		return nil, neutral.FieldErr("top_k", "not expressible in the Responses API")
	}
	if len(r.Stop) > 0 {
		return nil, neutral.FieldErr("stop_sequences", "stop sequences are not expressible in the Responses API")
	}
	items := []rsItem{}
	for i, m := range r.Messages {
		its, err := encodeRsMessage(fmt.Sprintf("messages[%d]", i), m)
		if err != nil {
			return nil, err
		}
		items = append(items, its...)
	}
	w.Input = wirefmt.MustJSON(items)
	for _, t := range r.Tools {
		if t.Custom {
			w.Tools = append(w.Tools, rsTool{Type: "custom", Name: t.Name, Description: t.Description})
			continue
		}
		w.Tools = append(w.Tools, rsTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: t.Schema, Strict: t.Strict})
	}
	switch r.ToolChoice.Mode {
	case neutral.ChoiceAuto, neutral.ChoiceNone, neutral.ChoiceRequired:
		w.ToolChoice = wirefmt.MustJSON(string(r.ToolChoice.Mode))
	case neutral.ChoiceTool:
		w.ToolChoice = wirefmt.MustJSON(map[string]string{"type": "function", "name": r.ToolChoice.Name})
	}
	if e := chat.OpenAIEffort(r.Reasoning, chat.ChatEfforts); e != "" {
		w.Reasoning = &rsReasoning{Effort: e}
		if e != "none" {
			w.Reasoning.Summary = "auto"
		}
	}
	if f := r.Format; f != nil {
		w.Text = &rsText{}
		w.Text.Format = &struct {
			Type   string          `json:"type"`
			Name   string          `json:"name,omitempty"`
			Schema json.RawMessage `json:"schema,omitempty"`
			Strict bool            `json:"strict,omitempty"`
		}{Type: f.Type, Name: f.Name, Schema: f.Schema, Strict: f.Strict}
		if f.Type == "json_schema" && f.Name == "" {
			w.Text.Format.Name = "output"
		}
	}
	return wirefmt.MustJSON(w), nil
}

func encodeRsMessage(field string, m neutral.Message) ([]rsItem, error) {
	var out, results []rsItem
	var content []rsContent
	for j, p := range m.Parts {
		pf := fmt.Sprintf("%s.content[%d]", field, j)
		switch p.Kind {
		case neutral.KindText:
			typ := "input_text"
			if m.Role == neutral.RoleAssistant {
				typ = "output_text"
			}
			content = append(content, rsContent{Type: typ, Text: p.Text})
		case neutral.KindImage:
			if m.Role == neutral.RoleAssistant {
				return nil, neutral.FieldErr(pf, "images in assistant turns are not expressible in the Responses API")
			}
			content = append(content, rsContent{Type: "input_image", ImageURL: neutral.ImageURL(p)})
		case neutral.KindToolCall:
			out = flushRsContent(out, m.Role, &content)
			args := neutral.ArgsOrEmpty(p.Args)
			out = append(out, rsItem{Type: "function_call", CallID: p.CallID, Name: p.Name, Arguments: &args})
		case neutral.KindToolResult:
			results = append(results, rsItem{Type: "function_call_output", CallID: p.CallID, Output: rsOutput(p)})
		case neutral.KindReasoning:
			if p.Encrypted == "" {
				continue
			}
			out = flushRsContent(out, m.Role, &content)
			it := rsItem{Type: "reasoning", ID: p.ItemID, EncryptedContent: p.Encrypted, Summary: &[]rsContent{}}
			if p.Text != "" {
				it.Summary = &[]rsContent{{Type: "summary_text", Text: p.Text}}
			}
			out = append(out, it)
		}
	}
	out = flushRsContent(out, m.Role, &content)
	return append(results, out...), nil
}

func flushRsContent(out []rsItem, role neutral.Role, content *[]rsContent) []rsItem {
	if len(*content) == 0 {
		return out
	}
	out = append(out, rsItem{Type: "message", Role: string(role), Content: wirefmt.MustJSON(*content)})
	*content = nil
	return out
}

// rsOutput renders a tool result's output: a string, or content items when
// it holds images.
func rsOutput(p neutral.Part) json.RawMessage {
	if text, err := neutral.TextOnly("", p.Content); err == nil {
		if p.IsError && !strings.HasPrefix(strings.ToLower(text), "error") {
			text = "Error: " + text
		}
		return wirefmt.MustJSON(text)
	}
	var cs []rsContent
	if p.IsError {
		cs = append(cs, rsContent{Type: "input_text", Text: "Error:"})
	}
	for _, c := range p.Content {
		if c.Kind == neutral.KindImage {
			cs = append(cs, rsContent{Type: "input_image", ImageURL: neutral.ImageURL(c)})
		} else {
			cs = append(cs, rsContent{Type: "input_text", Text: c.Text})
		}
	}
	return wirefmt.MustJSON(cs)
}

func deref[T any](p *[]T) []T {
	if p == nil {
		return nil
	}
	return *p
}

// customToolSchema is the function schema a freeform ("custom") tool gets
// on APIs without freeform tools: one string argument.
var customToolSchema = json.RawMessage(`{"type":"object","properties":{"input":{"type":"string","description":"the tool's freeform input"}},"required":["input"]}`)

// addRsTools adds Responses tools to r: function tools as they are, the
// tools of a "namespace" (Codex's grouping, also sent in an
// additional_tools input item) flattened, and freeform "custom" tools as
// functions with one string argument "input". Built-in tools (web_search,
// local_shell…) are FieldErrors: no other API runs them.
func addRsTools(field string, tools []rsTool, r *neutral.Request) error {
	for i, t := range tools {
		switch t.Type {
		case "function":
			r.Tools = append(r.Tools, neutral.Tool{Name: t.Name, Description: t.Description, Schema: t.Parameters, Strict: t.Strict})
		case "custom":
			r.Tools = append(r.Tools, neutral.Tool{Name: t.Name, Description: t.Description, Schema: customToolSchema, Custom: true})
		case "namespace":
			if err := addRsTools(fmt.Sprintf("%s[%d].tools", field, i), t.Tools, r); err != nil {
				return err
			}
		default:
			return neutral.FieldErr(fmt.Sprintf("%s[%d].type", field, i), "built-in tool %q is not translatable", t.Type)
		}
	}
	return nil
}
