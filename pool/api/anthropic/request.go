package anthropic

import (
	"encoding/json"
	"fmt"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
)

// Anthropic Messages request wire types (docs.anthropic.com "Messages").
// anRequest is the decoded form; the encoder writes
// anRequestT[any, anMessageOut] (system a string, content blocks as
// values), encoded once by the one json.Marshal of the request.
type anRequest = anRequestT[json.RawMessage, anMessage]

type anRequestT[S, M any] struct {
	Model         string          `json:"model"`
	Messages      []M             `json:"messages"`
	System        S               `json:"system,omitempty"`
	MaxTokens     int             `json:"max_tokens"`
	Metadata      *anMetadata     `json:"metadata,omitempty"`
	StopSequences []string        `json:"stop_sequences,omitempty"`
	Stream        bool            `json:"stream,omitempty"`
	Temperature   *float64        `json:"temperature,omitempty"`
	TopP          *float64        `json:"top_p,omitempty"`
	TopK          *int            `json:"top_k,omitempty"`
	Tools         []anTool        `json:"tools,omitempty"`
	ToolChoice    *anToolChoice   `json:"tool_choice,omitempty"`
	Thinking      *anThinking     `json:"thinking,omitempty"`
	OutputConfig  *anOutputConfig `json:"output_config,omitempty"`
	OutputFormat  *anFormat       `json:"output_format,omitempty"` // the structured-outputs beta name
}

type anMetadata struct {
	UserID string `json:"user_id,omitempty"`
}

type anMessage = anMessageT[json.RawMessage]

// anMessageOut is an encoded message.
type anMessageOut = anMessageT[[]anBlock]

type anMessageT[C any] struct {
	Role    string `json:"role"`
	Content C      `json:"content"`
}

// anBlock is one content block of a Messages request or answer, every
// kind's fields in one struct (Type tells which are used).
type anBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	Source    *anSource       `json:"source,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	Thinking  *string         `json:"thinking,omitempty"`
	Signature *string         `json:"signature,omitempty"`
	Data      string          `json:"data,omitempty"`
	// CacheControl is a prompt-cache breakpoint.
	CacheControl *neutral.AnCache `json:"cache_control,omitempty"`
}

type anSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

type anTool struct {
	Type        string          `json:"type,omitempty"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
	Strict      bool            `json:"strict,omitempty"`
	// CacheControl is a prompt-cache breakpoint.
	CacheControl *neutral.AnCache `json:"cache_control,omitempty"`
}

type anToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use,omitempty"`
}

type anThinking struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens,omitempty"`
}

type anOutputConfig struct {
	Effort string    `json:"effort,omitempty"`
	Format *anFormat `json:"format,omitempty"`
}

type anFormat struct {
	Type   string          `json:"type"`
	Schema json.RawMessage `json:"schema,omitempty"`
}

var (
	anKnownKeys = []string{"model", "messages", "system", "max_tokens", "metadata", "stop_sequences",
		"stream", "temperature", "top_p", "top_k", "tools", "tool_choice", "thinking", "output_config", "output_format"}
	// Dropped on translation: routing and cache hints with no effect on the
	// answer's content.
	anIgnoredKeys = []string{"service_tier", "context_management", "inference_geo"}
)

// defaultMaxTokens is the max_tokens sent to an Anthropic member when the
// client set no limit (Anthropic requires one).
const defaultMaxTokens = 32000

// decodeRequest reads a Messages request body; valid says body is known to
// be valid JSON (ParseRequest accepted it), so it is decoded by one scan.
// Server tools, documents, containers and MCP servers are FieldErrors;
// cache_control breakpoints are kept (a tool result's on the result; SPEC
// POOL-24), citations settings dropped.
//
// One piece: a flat walk over the Messages fields in document order, each
// filling the one Request.
func decodeRequest(body []byte, valid bool) (*neutral.Request, error) {
	var w anRequest
	if err := neutral.ObjectKeys(body, &w, scanAnRequest, anKnownKeys, anIgnoredKeys, valid); err != nil {
		return nil, err
	}
	r := &neutral.Request{Model: w.Model, Stream: w.Stream, MaxTokens: w.MaxTokens, Temperature: w.Temperature,
		TopP: w.TopP, TopK: w.TopK, Stop: w.StopSequences}
	if w.Metadata != nil {
		r.User = w.Metadata.UserID
	}
	var sys []anBlock
	s, isStr, err := neutral.StringOrArray(w.System, "system", &sys, scanAnBlock)
	if err != nil {
		return nil, err
	}
	if isStr {
		r.System = []string{s}
	}
	for i, b := range sys {
		if b.Type != "text" {
			return nil, neutral.FieldErr(fmt.Sprintf("system[%d].type", i), "%q is not translatable (text only)", b.Type)
		}
		r.System = append(r.System, b.Text)
		r.MarkSystem(neutral.CacheOf(b.CacheControl))
	}
	for i, m := range w.Messages {
		field := fmt.Sprintf("messages[%d]", i)
		if m.Role == "system" {
			// Claude Code sends mid-conversation system messages; like Chat's,
			// they are hoisted into the system prompt in order.
			m.Role = string(neutral.RoleUser)
			msg, err := decodeAnMessage(field, m)
			if err != nil {
				return nil, err
			}
			text, err := neutral.TextOnly(field+".content", msg.Parts)
			if err != nil {
				return nil, err
			}
			r.System = append(r.System, text)
			continue
		}
		msg, err := decodeAnMessage(field, m)
		if err != nil {
			return nil, err
		}
		r.Messages = append(r.Messages, msg)
	}
	if err := decodeAnTools(&w, r); err != nil {
		return nil, err
	}
	if err := decodeAnReasoning(&w, r); err != nil {
		return nil, err
	}
	f := w.OutputFormat
	if w.OutputConfig != nil && w.OutputConfig.Format != nil {
		f = w.OutputConfig.Format
	}
	if f != nil {
		if f.Type != "json_schema" {
			return nil, neutral.FieldErr("output_config.format.type", "unknown value %q", f.Type)
		}
		r.Format = &neutral.Format{Type: "json_schema", Schema: f.Schema}
	}
	return r, nil
}

// decodeAnTools sets r's tools and tool choice from w's: server tools are
// FieldErrors.
func decodeAnTools(w *anRequest, r *neutral.Request) error {
	for i, t := range w.Tools {
		if t.Type != "" && t.Type != "custom" {
			return neutral.FieldErr(fmt.Sprintf("tools[%d].type", i), "server tool %q is not translatable", t.Type)
		}
		r.Tools = append(r.Tools, neutral.Tool{Name: t.Name, Description: t.Description, Schema: t.InputSchema, Strict: t.Strict,
			Cache: neutral.CacheOf(t.CacheControl)})
	}
	tc := w.ToolChoice
	if tc == nil {
		return nil
	}
	switch tc.Type {
	case "auto", "none":
		r.ToolChoice.Mode = neutral.ChoiceMode(tc.Type)
	case "any":
		r.ToolChoice.Mode = neutral.ChoiceRequired
	case "tool":
		r.ToolChoice = neutral.ToolChoice{Mode: neutral.ChoiceTool, Name: tc.Name}
	default:
		return neutral.FieldErr("tool_choice.type", "unknown value %q", tc.Type)
	}
	if tc.DisableParallelToolUse {
		f := false
		r.ParallelToolCalls = &f
	}
	return nil
}

func decodeAnReasoning(w *anRequest, r *neutral.Request) error {
	if t := w.Thinking; t != nil {
		switch t.Type {
		case "enabled":
			r.Reasoning.Budget = t.BudgetTokens
		case "disabled":
			r.Reasoning.Disabled = true
		case "adaptive":
		default:
			return neutral.FieldErr("thinking.type", "unknown value %q", t.Type)
		}
	}
	if w.OutputConfig != nil && w.OutputConfig.Effort != "" {
		if neutral.EffortRank(w.OutputConfig.Effort) < 0 {
			return neutral.FieldErr("output_config.effort", "unknown value %q", w.OutputConfig.Effort)
		}
		r.Reasoning.Effort = w.OutputConfig.Effort
	}
	return nil
}

func decodeAnMessage(field string, m anMessage) (neutral.Message, error) {
	msg := neutral.Message{Role: neutral.Role(m.Role)}
	if msg.Role != neutral.RoleUser && msg.Role != neutral.RoleAssistant {
		return msg, neutral.FieldErr(field+".role", "unknown role %q", m.Role)
	}
	var blocks []anBlock
	s, isStr, err := neutral.StringOrArray(m.Content, field+".content", &blocks, scanAnBlock)
	if err != nil {
		return msg, err
	}
	if isStr {
		msg.Parts = []neutral.Part{{Kind: neutral.KindText, Text: s}}
		return msg, nil
	}
	for j, b := range blocks {
		p, err := decodeAnBlock(fmt.Sprintf("%s.content[%d]", field, j), b)
		if err != nil {
			return msg, err
		}
		if p.Kind != neutral.KindReasoning && b.CacheControl != nil {
			p.Cache = neutral.CacheOf(b.CacheControl)
		}
		msg.Parts = append(msg.Parts, p)
	}
	return msg, nil
}

func decodeAnBlock(field string, b anBlock) (neutral.Part, error) {
	switch b.Type {
	case "text":
		return neutral.Part{Kind: neutral.KindText, Text: b.Text}, nil
	case "image":
		if b.Source == nil {
			return neutral.Part{}, neutral.FieldErr(field+".source", "missing")
		}
		switch b.Source.Type {
		case "base64":
			return neutral.Part{Kind: neutral.KindImage, MediaType: b.Source.MediaType, Data: b.Source.Data}, nil
		case "url":
			return neutral.Part{Kind: neutral.KindImage, URL: b.Source.URL}, nil
		}
		return neutral.Part{}, neutral.FieldErr(field+".source.type", "image source %q is not translatable", b.Source.Type)
	case "tool_use":
		return neutral.Part{Kind: neutral.KindToolCall, CallID: originalToolID(b.ID), Name: b.Name, Args: neutral.ArgsOrEmpty(string(b.Input))}, nil
	case "tool_result":
		p := neutral.Part{Kind: neutral.KindToolResult, CallID: originalToolID(b.ToolUseID), IsError: b.IsError}
		var inner []anBlock
		s, isStr, err := neutral.StringOrArray(b.Content, field+".content", &inner, scanAnBlock)
		if err != nil {
			return neutral.Part{}, err
		}
		if isStr {
			p.Content = []neutral.Part{{Kind: neutral.KindText, Text: s}}
		}
		for k, ib := range inner {
			ip, err := decodeAnBlock(fmt.Sprintf("%s.content[%d]", field, k), ib)
			if err != nil {
				return neutral.Part{}, err
			}
			if ip.Kind != neutral.KindText && ip.Kind != neutral.KindImage {
				return neutral.Part{}, neutral.FieldErr(fmt.Sprintf("%s.content[%d].type", field, k), "%q inside a tool result is not translatable", ib.Type)
			}
			if ib.CacheControl != nil {
				p.Cache = neutral.CacheOf(ib.CacheControl) // the result's own, if any, wins (decodeAnMessage)
			}
			p.Content = append(p.Content, ip)
		}
		return p, nil
	case "thinking":
		p := neutral.Part{Kind: neutral.KindReasoning}
		if b.Thinking != nil {
			p.Text = *b.Thinking
		}
		if b.Signature != nil {
			p.Signature = *b.Signature
		}
		return p, nil
	case "redacted_thinking":
		return neutral.Part{Kind: neutral.KindReasoning, Redacted: b.Data}, nil
	}
	return neutral.Part{}, neutral.FieldErr(field+".type", "content block %q is not translatable", b.Type)
}
