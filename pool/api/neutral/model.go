package neutral

import (
	"encoding/json"
)

// AppendMessage adds m, merging it into the last message of the same role
// (tool results then a user message are one neutral user turn).
func AppendMessage(msgs []Message, m Message) []Message {
	if n := len(msgs); n > 0 && msgs[n-1].Role == m.Role {
		msgs[n-1].Parts = append(msgs[n-1].Parts, m.Parts...)
		return msgs
	}
	return append(msgs, m)
}

// Role is the speaker of a Message. System prompts live in Request.System;
// tool results are parts of a user message (the Anthropic and Gemini shape).
type Role string

// Roles.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Kind is the kind of a Part.
type Kind uint8

// Part kinds.
const (
	KindText       Kind = iota + 1 // Text
	KindImage                      // MediaType + Data (base64) or URL
	KindToolCall                   // CallID, Name, Args
	KindToolResult                 // CallID, Name (when known), Content, IsError
	KindReasoning                  // Text, Signature, Redacted, Encrypted, ItemID
)

func (k Kind) String() string {
	switch k {
	case KindText:
		return "text"
	case KindImage:
		return "image"
	case KindToolCall:
		return "tool call"
	case KindToolResult:
		return "tool result"
	case KindReasoning:
		return "reasoning"
	}
	return "unknown"
}

// Part is one piece of a message or an answer. Which fields are used depends
// on Kind (see the constants).
type Part struct {
	Kind Kind
	// Text is the text of a text or reasoning part.
	Text string
	// MediaType ("image/png") and Data (standard base64, no "data:" prefix)
	// of an inline image; URL of a linked image (http(s) or a file URI).
	MediaType, Data, URL string
	// CallID ties a tool call to its result. Name is the function name (on
	// a result: taken from the matching call when the API does not repeat
	// it). Args is the call's arguments as JSON object text ("{}" when none).
	CallID, Name, Args string
	// Content is a tool result's content: text and image parts.
	Content []Part
	// IsError marks a tool result that reports a failed tool run.
	IsError bool
	// Signature is Anthropic's thinking signature; Redacted is the data of an
	// Anthropic redacted_thinking block (Text empty).
	Signature, Redacted string
	// Encrypted is a Responses reasoning item's encrypted_content; ItemID its
	// id. Both only round-trip to a Responses member.
	Encrypted, ItemID string
	// Cache is the client's prompt-cache breakpoint on this part (text,
	// image, tool call or tool result), nil when none.
	Cache *Cache
}

// Cache is a prompt-cache breakpoint (SPEC POOL-24): the prefix of the
// request up to and including what carries it (a part, a tool, a system
// block) may be cached by the member. It is Anthropic's cache_control
// {"type":"ephemeral","ttl":TTL}, which Chat clients also put on content
// parts and messages for servers that take it (OpenRouter, LiteLLM,
// OpenCode's openai-compatible provider).
type Cache struct {
	// TTL is "5m", "1h" or "" (the API's default, 5 minutes).
	TTL string
}

// Message is one turn of the conversation.
type Message struct {
	Role  Role
	Parts []Part
}

// Tool is a function the model may call. Schema is the JSON Schema of its
// arguments, passed through unchanged.
type Tool struct {
	Name        string
	Description string
	Schema      json.RawMessage
	Strict      bool
	// Custom marks a Responses freeform ("custom") tool, sent to other APIs
	// as a function with one string argument "input" (customToolSchema).
	Custom bool
	// Cache is the client's breakpoint after this tool.
	Cache *Cache
}

// CustomTools are the names of r's freeform tools: a Responses client gets
// calls of them back as custom_tool_call items (NewStream, EncodeResponse).
func (r *Request) CustomTools() []string {
	var out []string
	for _, t := range r.Tools {
		if t.Custom {
			out = append(out, t.Name)
		}
	}
	return out
}

// ChoiceMode says how the model must use the tools.
type ChoiceMode string

// Tool choice modes. ChoiceDefault leaves the API's default.
const (
	ChoiceDefault  ChoiceMode = ""
	ChoiceAuto     ChoiceMode = "auto"
	ChoiceNone     ChoiceMode = "none"
	ChoiceRequired ChoiceMode = "required" // some tool (Anthropic "any", Gemini ANY)
	ChoiceTool     ChoiceMode = "tool"     // the tool named ToolChoice.Name
)

// ToolChoice is the request's tool choice.
type ToolChoice struct {
	Mode ChoiceMode
	Name string
}

// Format asks for structured output: Type "json_object" (any JSON) or
// "json_schema" (Schema, with Name and Strict where the API has them).
type Format struct {
	Type   string
	Name   string
	Schema json.RawMessage
	Strict bool
}

// Efforts is the neutral reasoning-effort scale in ascending order
// (docs/POOL.md, reasoning effort): OpenAI's none…xhigh plus Anthropic's max.
// Encoders map a value their API lacks to the nearest one it has.
var Efforts = []string{"none", "minimal", "low", "medium", "high", "xhigh", "max"}

// Reasoning is what the request asks of the model's thinking.
type Reasoning struct {
	// Effort is a value of Efforts, or "" for the API's default.
	Effort string
	// Budget is a thinking budget in tokens (Anthropic budget_tokens, Gemini
	// thinkingBudget); 0 means unset. With both set, the target's own kind
	// wins.
	Budget int
	// Disabled is an explicit "no thinking" (Anthropic thinking disabled,
	// Gemini budget 0, OpenAI effort none).
	Disabled bool
}

// Request is a model call in neutral form.
type Request struct {
	Model  string
	Stream bool
	// System holds the system prompt blocks in order (Chat system/developer
	// messages anywhere in the conversation are hoisted here in order).
	System []string
	// SystemCache holds the client's breakpoint after each System block
	// (index i: after System[i]); nil, or shorter than System, where there
	// is none.
	SystemCache []*Cache
	Messages    []Message
	Tools       []Tool
	ToolChoice  ToolChoice
	// ParallelToolCalls is nil when unset.
	ParallelToolCalls *bool
	// MaxTokens is the output token limit; 0 means unset.
	MaxTokens   int
	Temperature *float64
	TopP        *float64
	TopK        *int
	Stop        []string
	Reasoning   Reasoning
	Format      *Format
	// User is an end-user id (Anthropic metadata.user_id, OpenAI user).
	User string
	// CacheKey is OpenAI's prompt_cache_key, which routes calls that share a
	// prefix to one cache (Chat Completions and Responses).
	CacheKey string
	// CacheBreakpoints asks the Anthropic request encoder to place the pool's own
	// breakpoints as well as the client's (pool/api/anthropic cache.go); the pool sets
	// it per member (channel cache_breakpoints).
	CacheBreakpoints bool
}

// MarkSystem sets c as the breakpoint after the last System block.
func (r *Request) MarkSystem(c *Cache) {
	if c == nil || len(r.System) == 0 {
		return
	}
	for len(r.SystemCache) < len(r.System) {
		r.SystemCache = append(r.SystemCache, nil)
	}
	r.SystemCache[len(r.System)-1] = c
}

// SystemMark is the client's breakpoint after System[i], nil when none.
func (r *Request) SystemMark(i int) *Cache {
	if i < len(r.SystemCache) {
		return r.SystemCache[i]
	}
	return nil
}

// StopReason says why an answer ended, in Anthropic's words.
type StopReason string

// Stop reasons.
const (
	StopEnd       StopReason = "end_turn"
	StopMaxTokens StopReason = "max_tokens"
	StopSequence  StopReason = "stop_sequence"
	StopToolUse   StopReason = "tool_use"
	StopFilter    StopReason = "content_filter" // Anthropic "refusal"
)

// Accounting counts tokens. Input excludes the cached tokens (Anthropic's
// input_tokens); OpenAI's prompt_tokens is Input+CacheRead+CacheWrite.
// Output includes Reasoning (OpenAI's completion_tokens); Gemini's
// candidatesTokenCount is Output-Reasoning.
type Usage struct {
	Input, CacheRead, CacheWrite, Output, Reasoning int64
}

// Response is a non-streamed answer in neutral form.
type Response struct {
	ID, Model string
	Parts     []Part
	Stop      StopReason
	// StopSequence is the matched stop sequence when Stop is StopSequence
	// and the API says which.
	StopSequence string
	Usage        Usage
}
