package translate

import (
	"fmt"
	"net/http"

	"github.com/dual-proxy/dual-proxy/pool/apikind"
)

// EventKind is the kind of a stream Event.
type EventKind uint8

// Stream event kinds.
const (
	EvStart     EventKind = iota + 1 // ID, Model, Usage (what is known at the start)
	EvPartStart                      // Index, Part: Kind; CallID and Name of a tool call; ItemID of reasoning
	EvDelta                          // Index, Part: Text (text, reasoning), Args (a tool call's JSON fragment), Signature, Encrypted, Redacted
	EvPartStop                       // Index
	EvFinish                         // Stop, StopSequence, Usage: the answer is complete
	EvPing                           // a keepalive
	EvError                          // Err: the upstream failed inside the stream
)

// Event is one step of a streamed answer in neutral form. A decoder emits,
// and an encoder relies on, this grammar:
//
//	EvStart (EvPartStart EvDelta* EvPartStop)* EvFinish
//
// with EvPing anywhere and EvError ending the stream at any point. Parts are
// sequential: Index counts 0, 1, 2… and a part is stopped before the next
// starts (the Anthropic model, which every other API can be written as).
type Event struct {
	Kind  EventKind
	Index int
	Part  Part
	// ID and Model of EvStart (either may be "").
	ID, Model string
	// Stop and StopSequence of EvFinish.
	Stop         StopReason
	StopSequence string
	// Usage of EvStart (partial) and EvFinish (final, cumulative).
	Usage Usage
	// Err of EvError.
	Err *Error
}

// StreamDecoder reads one upstream API's stream, one SSE event at a time.
// Decode gets the event's "event" field (name, may be "") and its joined
// "data" lines, and returns the neutral events it completes (often none).
// End is called at the end of the upstream body and returns the closing
// events of APIs whose end is the EOF (Gemini), or an error when the stream
// stopped before its end. Errors name the stream field at fault. The
// returned slice may be the decoder's own and is valid until the next
// Decode: use its events, or copy them (so the usual text delta costs no
// allocation).
type StreamDecoder interface {
	Decode(name string, data []byte) ([]Event, error)
	End() ([]Event, error)
}

// StreamEncoder writes one client API's stream. Encode returns the SSE bytes
// (zero or more complete events, each ending in a blank line) for ev.
type StreamEncoder interface {
	Encode(ev Event) ([]byte, error)
}

// NewStreamDecoder returns a decoder for streams of api.
func NewStreamDecoder(api apikind.Kind) StreamDecoder {
	switch api {
	case apikind.Anthropic:
		return &anthropicStreamDecoder{}
	case apikind.Chat:
		return newChatStreamDecoder()
	case apikind.Responses:
		return newResponsesStreamDecoder()
	case apikind.Gemini:
		return &geminiStreamDecoder{}
	}
	panic("translate: unknown API " + string(api))
}

// NewStreamEncoder returns an encoder writing streams of api. The client's
// events name the model the member's stream names at its start (Anthropic
// message_start, the first Chat chunk, Responses response.created, Gemini
// modelVersion), as a same-API stream passed through byte for byte does
// (SPEC POOL-21); model, the id the member was asked for, when it names
// none. custom names the request's freeform tools (Request.CustomTools).
func NewStreamEncoder(api apikind.Kind, model string, custom ...string) StreamEncoder {
	switch api {
	case apikind.Anthropic:
		return &anthropicStreamEncoder{model: model}
	case apikind.Chat:
		return &chatStreamEncoder{model: model}
	case apikind.Responses:
		return newResponsesStreamEncoder(model, custom)
	case apikind.Gemini:
		return &geminiStreamEncoder{model: model}
	}
	panic("translate: unknown API " + string(api))
}

// startModel is the model a translated stream names (NewStreamEncoder):
// the member's, from its start event, else fallback.
func startModel(ev Event, fallback string) string {
	if ev.Model != "" {
		return ev.Model
	}
	return fallback
}

// FieldError is a request (or answer) that cannot be expressed in the target
// API, or that is malformed. Field is the JSON path in the source document
// ("messages[2].content[0].type"). The pool answers it with a 400 (SPEC
// POOL-21).
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

func fieldErr(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Error is an API error in neutral form: the HTTP status (for an in-stream
// error, the status its type stands for), the upstream's type or code word
// and its message.
type Error struct {
	Status  int
	Type    string
	Message string
}

// statusOrDefault returns e.Status, or 500 when it is not an error status.
func (e Error) statusOrDefault() int {
	if e.Status < 400 || e.Status > 599 {
		return http.StatusInternalServerError
	}
	return e.Status
}

// anthropicTypeByStatus is Anthropic's error type per HTTP status
// (docs.anthropic.com "Errors"); used for the other direction too.
var anthropicTypeByStatus = map[int]string{
	400: "invalid_request_error", 401: "authentication_error", 402: "billing_error",
	403: "permission_error", 404: "not_found_error", 413: "request_too_large",
	429: "rate_limit_error", 500: "api_error", 504: "timeout_error", 529: "overloaded_error",
}

// statusByType maps the error type and code words of all four APIs to an
// HTTP status, for in-stream errors that carry no status.
var statusByType = map[string]int{
	"invalid_request_error": 400, "INVALID_ARGUMENT": 400, "FAILED_PRECONDITION": 400,
	"context_length_exceeded": 400, "authentication_error": 401, "invalid_api_key": 401,
	"UNAUTHENTICATED": 401, "billing_error": 402, "permission_error": 403,
	"PERMISSION_DENIED": 403, "not_found_error": 404, "model_not_found": 404, "NOT_FOUND": 404,
	"request_too_large": 413, "rate_limit_error": 429, "rate_limit_exceeded": 429,
	"insufficient_quota": 429, "RESOURCE_EXHAUSTED": 429, "api_error": 500,
	"server_error": 500, "INTERNAL": 500, "UNAVAILABLE": 503, "timeout_error": 504,
	"DEADLINE_EXCEEDED": 504, "overloaded_error": 529,
}

// geminiStatusByHTTP is the google.rpc.Code name per HTTP status.
var geminiStatusByHTTP = map[int]string{
	400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
	404: "NOT_FOUND", 409: "ABORTED", 429: "RESOURCE_EXHAUSTED", 499: "CANCELLED",
	500: "INTERNAL", 501: "UNIMPLEMENTED", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED",
}

// openAITypeByStatus is the OpenAI error type word per HTTP status.
var openAITypeByStatus = map[int]string{
	400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
	404: "not_found_error", 413: "invalid_request_error", 429: "rate_limit_exceeded",
}
