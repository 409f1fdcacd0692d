package api

import (
	"github.com/dual-proxy/dual-proxy/pool/api/anthropic"
	"github.com/dual-proxy/dual-proxy/pool/api/chat"
	"github.com/dual-proxy/dual-proxy/pool/api/gemini"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/responses"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// Flavour is one wire API a pool can serve (SPEC POOL-1). The call engine
// (package pool: call.go, stream.go) is flavour-neutral; everything that depends on the
// wire format sits behind this interface: which paths exist, what a request
// says (model, stream, session hints, capability demands), how to rewrite it
// for a member, where the commit point of a stream is, and the error shapes.
// AnthropicFlavour is the Anthropic Messages API; OpenAI Chat Completions and
// Responses implement the same interface next to it.
type Flavour interface {
	// Name is the channel api word of the pools it serves: config.APIAnthropic,
	// config.APIOpenAI or config.APIGemini.
	Name() string
	// API is the wire API it reads and writes.
	API() apikind.Kind
	// Endpoint maps method and the path after "/pool/{pool}" (e.g.
	// "/v1/messages") to an endpoint; false means 404.
	Endpoint(method, path string) (neutral.Endpoint, bool)
	// ParseRequest reads the client's JSON body. An error is the client's
	// fault and is answered 400 in ErrorBody's shape.
	ParseRequest(ep neutral.Endpoint, body []byte) (*neutral.CallInfo, error)
	// RewriteBody returns the body for one member: model set to target and,
	// when effort is not "", the effort field set to it (SPEC POOL-2, POOL-12).
	RewriteBody(ci *neutral.CallInfo, target, effort string) ([]byte, error)
	// NewWatcher returns the commit-point detector for one streamed attempt.
	NewWatcher() neutral.StreamWatcher
	// InspectBody reads a non-streamed 2xx answer: its usage and, when it is
	// not a usable answer, the failure class and a message (SPEC POOL-7):
	// config.ClassEmpty for an answer of the API's success shape with no content,
	// config.ClassServer for a body that is not JSON of that shape (a captive
	// portal's HTML, a gateway's "{}") or that carries an "error" object.
	// class "" means usable.
	InspectBody(ep neutral.Endpoint, body []byte) (u neutral.Accounting, class, msg string)
	// ParseError extracts the error type and message of an upstream error
	// body (JSON error document or error event data).
	ParseError(body []byte) (typ, msg string)
	// ErrorBody renders a pool error document with HTTP status status.
	ErrorBody(status int, msg string, attempts []neutral.Attempt) []byte
	// ErrorEvent renders the protocol's in-stream error event, sent when an
	// upstream fails after the commit point (SPEC POOL-7).
	ErrorEvent(status int, msg string) []byte
	// PingEvent is the keepalive event the pool sends on a quiet stream.
	PingEvent() []byte
}

// flavours are the wire APIs the pool serves, by Channel.API.
var flavours = map[string]Flavour{config.APIAnthropic: anthropic.AnthropicFlavour{}, config.APIOpenAI: chat.ChatFlavour{},
	config.APIOpenAIChat: chat.ChatFlavour{}, config.APIGemini: gemini.GeminiFlavour{}}

// ForAPI returns the flavour serving a pool of API api (config.APIAnthropic
// or config.APIOpenAI), or nil when this build has none.
func ForAPI(api string) Flavour { return flavours[api] }

// byKind are the flavours by the wire API they read and write.
var byKind = map[apikind.Kind]Flavour{apikind.Anthropic: anthropic.AnthropicFlavour{}, apikind.Chat: chat.ChatFlavour{},
	apikind.Responses: responses.ResponsesFlavour{}, apikind.Gemini: gemini.GeminiFlavour{}}

// Of returns the flavour of wire API k (the one that reads a member's
// answers of that API), or nil for a Kind that is none of the four.
func Of(k apikind.Kind) Flavour { return byKind[k] }
