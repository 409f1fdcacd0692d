package chat

import (
	"encoding/json"
	"fmt"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
)

// OpenAI Chat Completions request wire types (platform.openai.com
// "Create chat completion"). chatRequest is the decoded form; the encoder
// writes chatRequestT[chatMessageOut], whose content values are encoded
// once by the one json.Marshal of the request.
type chatRequest = chatRequestT[chatMessage]

type chatRequestT[M any] struct {
	Model               string          `json:"model"`
	Messages            []M             `json:"messages"`
	Tools               []chatTool      `json:"tools,omitempty"`
	ToolChoice          json.RawMessage `json:"tool_choice,omitempty"`
	ParallelToolCalls   *bool           `json:"parallel_tool_calls,omitempty"`
	MaxTokens           int             `json:"max_tokens,omitempty"`
	MaxCompletionTokens int             `json:"max_completion_tokens,omitempty"`
	Temperature         *float64        `json:"temperature,omitempty"`
	TopP                *float64        `json:"top_p,omitempty"`
	TopK                *int            `json:"top_k,omitempty"` // vLLM, Ollama and others
	Stop                json.RawMessage `json:"stop,omitempty"`
	Stream              bool            `json:"stream,omitempty"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options,omitempty"`
	ReasoningEffort string      `json:"reasoning_effort,omitempty"`
	ResponseFormat  *chatFormat `json:"response_format,omitempty"`
	User            string      `json:"user,omitempty"`
	N               *int        `json:"n,omitempty"`
	Modalities      []string    `json:"modalities,omitempty"`
	PromptCacheKey  string      `json:"prompt_cache_key,omitempty"`
}

// chatMessage is one message of a Chat Completions request, its content
// kept raw (a string or an array of parts).
type chatMessage = chatMessageT[json.RawMessage]

// chatMessageOut is an encoded message: Content is a string, a
// []chatContentPart or nil (null).
type chatMessageOut = chatMessageT[any]

type chatMessageT[C any] struct {
	Role             string          `json:"role"`
	Content          C               `json:"content"`
	Name             string          `json:"name,omitempty"`
	ToolCalls        []chatToolCall  `json:"tool_calls,omitempty"`
	ToolCallID       string          `json:"tool_call_id,omitempty"`
	ReasoningContent *string         `json:"reasoning_content,omitempty"`
	Reasoning        *string         `json:"reasoning,omitempty"`
	Refusal          *string         `json:"refusal,omitempty"`
	FunctionCall     json.RawMessage `json:"function_call,omitempty"`
	// CacheControl on a message marks its last part (OpenCode's
	// openai-compatible provider sends it so).
	CacheControl *neutral.AnCache `json:"cache_control,omitempty"`
}

type chatContentPart struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL *struct {
		URL    string `json:"url"`
		Detail string `json:"detail,omitempty"`
	} `json:"image_url,omitempty"`
	// CacheControl is Anthropic's breakpoint on a part, as OpenRouter and
	// LiteLLM take it.
	CacheControl *neutral.AnCache `json:"cache_control,omitempty"`
}

// chatToolCall is one tool call of an assistant message or a stream delta.
type chatToolCall struct {
	Index    *int             `json:"index,omitempty"`
	ID       string           `json:"id,omitempty"`
	Type     string           `json:"type,omitempty"`
	Function chatCallFunction `json:"function"`
}

type chatCallFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type chatTool struct {
	Type     string           `json:"type"`
	Function chatToolFunction `json:"function"`
}

type chatToolFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      bool            `json:"strict,omitempty"`
}

type chatFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name   string          `json:"name,omitempty"`
		Schema json.RawMessage `json:"schema,omitempty"`
		Strict bool            `json:"strict,omitempty"`
	} `json:"json_schema,omitempty"`
}

var (
	chatKnownKeys = []string{"model", "messages", "tools", "tool_choice", "parallel_tool_calls", "max_tokens",
		"max_completion_tokens", "temperature", "top_p", "top_k", "stop", "stream", "stream_options",
		"reasoning_effort", "response_format", "user", "n", "modalities", "prompt_cache_key"}
	// Dropped on translation: routing hints, cache retention, storage and
	// sampling penalties (no equivalent on Anthropic; they tune, not change,
	// the task).
	chatIgnoredKeys = []string{"store", "metadata", "safety_identifier", "service_tier",
		"frequency_penalty", "presence_penalty", "seed", "prediction", "verbosity", "prompt_cache_retention"}
)

// ChatEfforts are Chat's reasoning_effort values, ascending.
var ChatEfforts = []string{"none", "minimal", "low", "medium", "high", "xhigh"}

// decodeRequest reads a Chat Completions request body; valid says body is
// known to be valid JSON (ParseRequest accepted it), so it is decoded by one
// scan. system and developer messages are hoisted into Request.System in
// order; n > 1, audio, files and logprobs are FieldErrors. cache_control on
// a content part or a message and prompt_cache_key are kept (SPEC POOL-24).
func decodeRequest(body []byte, valid bool) (*neutral.Request, error) {
	var w chatRequest
	if err := neutral.ObjectKeys(body, &w, scanChatRequest, chatKnownKeys, chatIgnoredKeys, valid); err != nil {
		return nil, err
	}
	if w.N != nil && *w.N != 1 {
		return nil, neutral.FieldErr("n", "only 1 choice is translatable")
	}
	for _, m := range w.Modalities {
		if m != "text" {
			return nil, neutral.FieldErr("modalities", "%q output is not translatable", m)
		}
	}
	r := &neutral.Request{Model: w.Model, Stream: w.Stream, MaxTokens: w.MaxCompletionTokens, Temperature: w.Temperature,
		TopP: w.TopP, TopK: w.TopK, ParallelToolCalls: w.ParallelToolCalls, User: w.User, CacheKey: w.PromptCacheKey}
	if r.MaxTokens == 0 {
		r.MaxTokens = w.MaxTokens
	}
	s, isStr, err := neutral.StringOrArray(w.Stop, "stop", &r.Stop, nil)
	if err != nil {
		return nil, err
	}
	if isStr {
		r.Stop = []string{s}
	}
	if err := decodeChatMessages(w.Messages, r); err != nil {
		return nil, err
	}
	for i, t := range w.Tools {
		if t.Type != "function" {
			return nil, neutral.FieldErr(fmt.Sprintf("tools[%d].type", i), "tool type %q is not translatable", t.Type)
		}
		r.Tools = append(r.Tools, neutral.Tool{Name: t.Function.Name, Description: t.Function.Description, Schema: t.Function.Parameters, Strict: t.Function.Strict})
	}
	if r.ToolChoice, err = DecodeOpenAIToolChoice(w.ToolChoice, true); err != nil {
		return nil, err
	}
	if e := w.ReasoningEffort; e != "" {
		if neutral.EffortRank(e) < 0 {
			return nil, neutral.FieldErr("reasoning_effort", "unknown value %q", e)
		}
		r.Reasoning.Effort = e
	}
	if f := w.ResponseFormat; f != nil {
		switch f.Type {
		case "text":
		case "json_object":
			r.Format = &neutral.Format{Type: "json_object"}
		case "json_schema":
			if f.JSONSchema == nil {
				return nil, neutral.FieldErr("response_format.json_schema", "missing")
			}
			r.Format = &neutral.Format{Type: "json_schema", Name: f.JSONSchema.Name, Schema: f.JSONSchema.Schema, Strict: f.JSONSchema.Strict}
		default:
			return nil, neutral.FieldErr("response_format.type", "unknown value %q", f.Type)
		}
	}
	return r, nil
}

// DecodeOpenAIToolChoice reads "auto"|"none"|"required" or a named
// function: {"type":"function","function":{"name"}} (Chat) or
// {"type":"function","name"} (Responses).
func DecodeOpenAIToolChoice(raw json.RawMessage, chat bool) (neutral.ToolChoice, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return neutral.ToolChoice{}, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "auto", "none", "required":
			return neutral.ToolChoice{Mode: neutral.ChoiceMode(s)}, nil
		}
		return neutral.ToolChoice{}, neutral.FieldErr("tool_choice", "unknown value %q", s)
	}
	var o struct {
		Type     string `json:"type"`
		Name     string `json:"name"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &o); err != nil || o.Type != "function" {
		return neutral.ToolChoice{}, neutral.FieldErr("tool_choice.type", "only function tool choices are translatable")
	}
	if chat {
		return neutral.ToolChoice{Mode: neutral.ChoiceTool, Name: o.Function.Name}, nil
	}
	return neutral.ToolChoice{Mode: neutral.ChoiceTool, Name: o.Name}, nil
}

func decodeChatMessages(msgs []chatMessage, r *neutral.Request) error {
	names := map[string]string{} // tool call id → function name
	for i, m := range msgs {
		field := fmt.Sprintf("messages[%d]", i)
		switch m.Role {
		case "system", "developer":
			var parts []chatContentPart
			s, isStr, err := neutral.StringOrArray(m.Content, field+".content", &parts, scanChatContentPart)
			if err != nil {
				return err
			}
			mark := neutral.CacheOf(m.CacheControl)
			for j, p := range parts {
				if p.Type != "text" {
					return neutral.FieldErr(fmt.Sprintf("%s.content[%d].type", field, j), "%q in a system message is not translatable", p.Type)
				}
				s += p.Text
				if p.CacheControl != nil {
					mark = neutral.CacheOf(p.CacheControl) // a mark inside moves to the message's end
				}
			}
			if isStr || len(parts) > 0 {
				r.System = append(r.System, s)
				r.MarkSystem(mark)
			}
		case "user", "assistant":
			parts, err := decodeChatContent(field+".content", m.Content)
			if err != nil {
				return err
			}
			msg := neutral.Message{Role: neutral.Role(m.Role)}
			if rc := firstNonNil(m.ReasoningContent, m.Reasoning); rc != "" {
				msg.Parts = append(msg.Parts, neutral.Part{Kind: neutral.KindReasoning, Text: rc})
			}
			msg.Parts = append(msg.Parts, parts...)
			if len(m.FunctionCall) > 0 && string(m.FunctionCall) != "null" {
				return neutral.FieldErr(field+".function_call", "the legacy function_call form is not translatable; use tool_calls")
			}
			for j, tc := range m.ToolCalls {
				if tc.Type != "" && tc.Type != "function" {
					return neutral.FieldErr(fmt.Sprintf("%s.tool_calls[%d].type", field, j), "%q is not translatable", tc.Type)
				}
				names[tc.ID] = tc.Function.Name
				msg.Parts = append(msg.Parts, neutral.Part{Kind: neutral.KindToolCall, CallID: tc.ID, Name: tc.Function.Name, Args: neutral.ArgsOrEmpty(tc.Function.Arguments)})
			}
			if n := len(msg.Parts); n > 0 && m.CacheControl != nil && msg.Parts[n-1].Kind != neutral.KindReasoning {
				msg.Parts[n-1].Cache = neutral.CacheOf(m.CacheControl)
			}
			r.Messages = neutral.AppendMessage(r.Messages, msg)
		case "tool":
			content, err := decodeChatContent(field+".content", m.Content)
			if err != nil {
				return err
			}
			p := neutral.Part{Kind: neutral.KindToolResult, CallID: m.ToolCallID, Name: names[m.ToolCallID], Content: content,
				Cache: neutral.CacheOf(m.CacheControl)}
			for k := range content {
				if content[k].Cache != nil {
					p.Cache, content[k].Cache = content[k].Cache, nil // a result is marked as a whole
				}
			}
			r.Messages = neutral.AppendMessage(r.Messages, neutral.Message{Role: neutral.RoleUser, Parts: []neutral.Part{p}})
		default:
			return neutral.FieldErr(field+".role", "role %q is not translatable", m.Role)
		}
	}
	return nil
}

func firstNonNil(a, b *string) string {
	if a != nil {
		return *a
	}
	if b != nil {
		return *b
	}
	return ""
}

func decodeChatContent(field string, raw json.RawMessage) ([]neutral.Part, error) {
	var parts []chatContentPart
	s, isStr, err := neutral.StringOrArray(raw, field, &parts, scanChatContentPart)
	if err != nil {
		return nil, err
	}
	if isStr {
		return []neutral.Part{{Kind: neutral.KindText, Text: s}}, nil
	}
	var out []neutral.Part
	for j, p := range parts {
		switch p.Type {
		case "text":
			out = append(out, neutral.Part{Kind: neutral.KindText, Text: p.Text, Cache: neutral.CacheOf(p.CacheControl)})
		case "image_url":
			if p.ImageURL == nil {
				return nil, neutral.FieldErr(fmt.Sprintf("%s[%d].image_url", field, j), "missing")
			}
			img := neutral.ImageFromURL(p.ImageURL.URL)
			img.Cache = neutral.CacheOf(p.CacheControl)
			out = append(out, img)
		default:
			return nil, neutral.FieldErr(fmt.Sprintf("%s[%d].type", field, j), "content part %q is not translatable", p.Type)
		}
	}
	return out, nil
}
