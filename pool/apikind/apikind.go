// Package apikind names the four wire APIs the pool speaks. It is the one list
// shared by the API packages (pool/api/...), the registry (pool/api) and the
// channel api words (pool/config), and imports nothing.
package apikind

// Kind is one wire API. Its value is the channel `api` word of a channel
// that speaks exactly that API; Responses is served by `api: openai`
// channels, which speak Chat Completions and Responses.
type Kind string

// The four APIs.
const (
	Anthropic Kind = "anthropic"   // Anthropic Messages: POST /v1/messages
	Chat      Kind = "openai-chat" // OpenAI Chat Completions: POST /v1/chat/completions
	Responses Kind = "responses"   // OpenAI Responses: POST /v1/responses
	Gemini    Kind = "gemini"      // Gemini generateContent: POST /v1beta/models/{m}:generateContent
)
