package translate

import (
	"encoding/json"
	"fmt"
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
	// openai-compatible provider sends it so; SPEC POOL-24).
	CacheControl *anCache `json:"cache_control,omitempty"`
}

type chatContentPart struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL *struct {
		URL    string `json:"url"`
		Detail string `json:"detail,omitempty"`
	} `json:"image_url,omitempty"`
	// CacheControl is Anthropic's breakpoint on a part, as OpenRouter and
	// LiteLLM take it (SPEC POOL-24).
	CacheControl *anCache `json:"cache_control,omitempty"`
}

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

// chatEfforts are Chat's reasoning_effort values, ascending.
var chatEfforts = []string{"none", "minimal", "low", "medium", "high", "xhigh"}

// DecodeChatRequest reads a Chat Completions request body. system and
// developer messages are hoisted into Request.System in order; n > 1,
// audio, files and logprobs are FieldErrors. cache_control on a content
// part or a message and prompt_cache_key are kept (SPEC POOL-24).
func DecodeChatRequest(body []byte) (*Request, error) { return decodeChatRequest(body, false) }

// decodeChatRequest is DecodeChatRequest; valid says body is known to be valid JSON
// (objectKeys).
func decodeChatRequest(body []byte, valid bool) (*Request, error) {
	var w chatRequest
	if err := objectKeys(body, &w, scanChatRequest, chatKnownKeys, chatIgnoredKeys, valid); err != nil {
		return nil, err
	}
	if w.N != nil && *w.N != 1 {
		return nil, fieldErr("n", "only 1 choice is translatable")
	}
	for _, m := range w.Modalities {
		if m != "text" {
			return nil, fieldErr("modalities", "%q output is not translatable", m)
		}
	}
	r := &Request{Model: w.Model, Stream: w.Stream, MaxTokens: w.MaxCompletionTokens, Temperature: w.Temperature,
		TopP: w.TopP, TopK: w.TopK, ParallelToolCalls: w.ParallelToolCalls, User: w.User, CacheKey: w.PromptCacheKey}
	if r.MaxTokens == 0 {
		r.MaxTokens = w.MaxTokens
	}
	s, isStr, err := stringOrArray(w.Stop, "stop", &r.Stop, nil)
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
			return nil, fieldErr(fmt.Sprintf("tools[%d].type", i), "tool type %q is not translatable", t.Type)
		}
		r.Tools = append(r.Tools, Tool{Name: t.Function.Name, Description: t.Function.Description, Schema: t.Function.Parameters, Strict: t.Function.Strict})
	}
	if r.ToolChoice, err = decodeOpenAIToolChoice(w.ToolChoice, true); err != nil {
		return nil, err
	}
	if e := w.ReasoningEffort; e != "" {
		if effortRank(e) < 0 {
			return nil, fieldErr("reasoning_effort", "unknown value %q", e)
		}
		r.Reasoning.Effort = e
	}
	if f := w.ResponseFormat; f != nil {
		switch f.Type {
		case "text":
		case "json_object":
			r.Format = &Format{Type: "json_object"}
		case "json_schema":
			if f.JSONSchema == nil {
				return nil, fieldErr("response_format.json_schema", "missing")
			}
			r.Format = &Format{Type: "json_schema", Name: f.JSONSchema.Name, Schema: f.JSONSchema.Schema, Strict: f.JSONSchema.Strict}
		default:
			return nil, fieldErr("response_format.type", "unknown value %q", f.Type)
		}
	}
	return r, nil
}

// decodeOpenAIToolChoice reads "auto"|"none"|"required" or a named
// function: {"type":"function","function":{"name"}} (Chat) or
// {"type":"function","name"} (Responses).
func decodeOpenAIToolChoice(raw json.RawMessage, chat bool) (ToolChoice, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return ToolChoice{}, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "auto", "none", "required":
			return ToolChoice{Mode: ChoiceMode(s)}, nil
		}
		return ToolChoice{}, fieldErr("tool_choice", "unknown value %q", s)
	}
	var o struct {
		Type     string `json:"type"`
		Name     string `json:"name"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &o); err != nil || o.Type != "function" {
		return ToolChoice{}, fieldErr("tool_choice.type", "only function tool choices are translatable")
	}
	if chat {
		return ToolChoice{Mode: ChoiceTool, Name: o.Function.Name}, nil
	}
	return ToolChoice{Mode: ChoiceTool, Name: o.Name}, nil
}

func decodeChatMessages(msgs []chatMessage, r *Request) error {
	names := map[string]string{} // tool call id → function name
	for i, m := range msgs {
		field := fmt.Sprintf("messages[%d]", i)
		switch m.Role {
		case "system", "developer":
			var parts []chatContentPart
			s, isStr, err := stringOrArray(m.Content, field+".content", &parts, scanChatContentPart)
			if err != nil {
				return err
			}
			mark := cacheOf(m.CacheControl)
			for j, p := range parts {
				if p.Type != "text" {
					return fieldErr(fmt.Sprintf("%s.content[%d].type", field, j), "%q in a system message is not translatable", p.Type)
				}
				s += p.Text
				if p.CacheControl != nil {
					mark = cacheOf(p.CacheControl) // a mark inside moves to the message's end
				}
			}
			if isStr || len(parts) > 0 {
				r.System = append(r.System, s)
				r.markSystem(mark)
			}
		case "user", "assistant":
			parts, err := decodeChatContent(field+".content", m.Content)
			if err != nil {
				return err
			}
			msg := Message{Role: Role(m.Role)}
			if rc := firstNonNil(m.ReasoningContent, m.Reasoning); rc != "" {
				msg.Parts = append(msg.Parts, Part{Kind: KindReasoning, Text: rc})
			}
			msg.Parts = append(msg.Parts, parts...)
			if len(m.FunctionCall) > 0 && string(m.FunctionCall) != "null" {
				return fieldErr(field+".function_call", "the legacy function_call form is not translatable; use tool_calls")
			}
			for j, tc := range m.ToolCalls {
				if tc.Type != "" && tc.Type != "function" {
					return fieldErr(fmt.Sprintf("%s.tool_calls[%d].type", field, j), "%q is not translatable", tc.Type)
				}
				names[tc.ID] = tc.Function.Name
				msg.Parts = append(msg.Parts, Part{Kind: KindToolCall, CallID: tc.ID, Name: tc.Function.Name, Args: argsOrEmpty(tc.Function.Arguments)})
			}
			if n := len(msg.Parts); n > 0 && m.CacheControl != nil && msg.Parts[n-1].Kind != KindReasoning {
				msg.Parts[n-1].Cache = cacheOf(m.CacheControl)
			}
			r.Messages = appendMessage(r.Messages, msg)
		case "tool":
			content, err := decodeChatContent(field+".content", m.Content)
			if err != nil {
				return err
			}
			p := Part{Kind: KindToolResult, CallID: m.ToolCallID, Name: names[m.ToolCallID], Content: content,
				Cache: cacheOf(m.CacheControl)}
			for k := range content {
				if content[k].Cache != nil {
					p.Cache, content[k].Cache = content[k].Cache, nil // a result is marked as a whole
				}
			}
			r.Messages = appendMessage(r.Messages, Message{Role: RoleUser, Parts: []Part{p}})
		default:
			return fieldErr(field+".role", "role %q is not translatable", m.Role)
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

// appendMessage adds m, merging it into the last message of the same role
// (tool results then a user message are one neutral user turn).
func appendMessage(msgs []Message, m Message) []Message {
	if n := len(msgs); n > 0 && msgs[n-1].Role == m.Role {
		msgs[n-1].Parts = append(msgs[n-1].Parts, m.Parts...)
		return msgs
	}
	return append(msgs, m)
}

func decodeChatContent(field string, raw json.RawMessage) ([]Part, error) {
	var parts []chatContentPart
	s, isStr, err := stringOrArray(raw, field, &parts, scanChatContentPart)
	if err != nil {
		return nil, err
	}
	if isStr {
		return []Part{{Kind: KindText, Text: s}}, nil
	}
	var out []Part
	for j, p := range parts {
		switch p.Type {
		case "text":
			out = append(out, Part{Kind: KindText, Text: p.Text, Cache: cacheOf(p.CacheControl)})
		case "image_url":
			if p.ImageURL == nil {
				return nil, fieldErr(fmt.Sprintf("%s[%d].image_url", field, j), "missing")
			}
			img := imageFromURL(p.ImageURL.URL)
			img.Cache = cacheOf(p.CacheControl)
			out = append(out, img)
		default:
			return nil, fieldErr(fmt.Sprintf("%s[%d].type", field, j), "content part %q is not translatable", p.Type)
		}
	}
	return out, nil
}
