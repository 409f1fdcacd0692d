package api

import (
	"net/http"

	"github.com/dual-proxy/dual-proxy/pool/api/anthropic"
	"github.com/dual-proxy/dual-proxy/pool/api/chat"
	"github.com/dual-proxy/dual-proxy/pool/api/gemini"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/responses"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// Flavour is one wire API a pool can serve (SPEC POOL-1). The call
// engine (package pool) is API-neutral; everything that depends on the wire
// format sits behind this interface: which paths exist, what a request says
// (model, stream, session hints, capability demands), how to rewrite it for a
// member, where the commit point of a stream is, the error shapes, the codec
// to and from the neutral model, and the rules that let a session survive a
// change of member (output limits, reasoning signatures). Each API package
// (anthropic, chat, responses, gemini) implements it as its Flavour.
type Flavour interface {
	// Name is the channel api word of the pools it serves: config.APIAnthropic,
	// config.APIOpenAI or config.APIGemini.
	Name() string
	// API is the wire API it reads and writes.
	API() apikind.Kind
	// Endpoint maps method and the path after "/pool/{pool}" (e.g.
	// "/v1/messages") to an endpoint; false means 404.
	Endpoint(method, path string) (neutral.Endpoint, bool)
	// UpstreamPath is the path of a model call of this API sent to a
	// member (the pool's request translated into it): Gemini names model
	// and stream in the path, the others ignore them.
	UpstreamPath(model string, stream bool) string
	// ParseRequest reads the client's JSON body. An error is the client's
	// fault and is answered 400 in ErrorBody's shape.
	ParseRequest(ep neutral.Endpoint, body []byte) (*neutral.CallInfo, error)
	// RewriteBody returns the body for one member: model set to target and,
	// when effort is not "", the effort field set to it.
	RewriteBody(ci *neutral.CallInfo, target, effort string) ([]byte, error)
	// NewWatcher returns the commit-point detector for one streamed attempt.
	NewWatcher() neutral.StreamWatcher
	// InspectBody reads a non-streamed 2xx answer: its usage and, when it is
	// not a usable answer, the failure class and a message:
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
	// upstream fails after the commit point.
	ErrorEvent(status int, msg string) []byte
	// PingEvent is the keepalive event the pool sends on a quiet stream.
	PingEvent() []byte

	// DecodeRequest reads a client request body into the neutral model. Gemini
	// takes model and stream from the URL; the other APIs read them from the body
	// and ignore the arguments. valid: the body is known to be valid JSON
	// (ParseRequest accepted it), so it is decoded by one scan, not validated
	// again.
	DecodeRequest(body []byte, model string, stream, valid bool) (*neutral.Request, error)
	// EncodeRequest writes r as a request body of this API (Gemini's model
	// and stream belong in the path: UpstreamPath).
	EncodeRequest(r *neutral.Request) ([]byte, error)
	// DecodeResponse reads a non-streamed answer body.
	DecodeResponse(body []byte) (*neutral.Response, error)
	// EncodeResponse writes r as a non-streamed answer naming model; custom
	// names the request's freeform tools (neutral.Request.CustomTools),
	// which only Responses has.
	EncodeResponse(r *neutral.Response, model string, custom []string) ([]byte, error)
	// NewStreamDecoder returns a decoder for one stream of this API.
	NewStreamDecoder() neutral.StreamDecoder
	// NewStreamEncoder returns an encoder of one client stream of this API
	// naming model (unless the member's stream names its own); custom as
	// for EncodeResponse.
	NewStreamEncoder(model string, custom []string) neutral.StreamEncoder
	// EncodeError renders e as this API's error document and the HTTP
	// status to send.
	EncodeError(e neutral.Error) (int, []byte)
	// EncodeErrorEvent renders e as this API's in-stream error event.
	EncodeErrorEvent(e neutral.Error) []byte

	// LowerLimit returns body, a request of this API, with each output
	// limit above limit (tokens) set to limit, every other byte as the
	// client sent it.
	LowerLimit(body []byte, limit int) []byte
	// SignatureKeys are the state keys (neutral.SigKey) of the reasoning
	// signatures a request's history carries; unsigned: it also holds
	// reasoning without one. APIs without signatures give
	// none.
	SignatureKeys(body []byte) (keys []string, unsigned bool)
	// StripSignatures returns body without the signed reasoning whose key
	// keep refuses, in the form this API accepts.
	StripSignatures(body []byte, keep func(key string) bool) []byte

	// SetTranslatedHeaders sets on h, the headers of a request the pool
	// translated into this API, those the API requires that a client of
	// another API did not send (Anthropic's anthropic-version).
	SetTranslatedHeaders(h http.Header)
	// MemberPath is the path (after the member's base_url) and query of a
	// call of endpoint ep sent to a member of this API for model: for
	// passthrough (translated false) the client's path and query (query
	// as the pool forwards it: without the pool token), else UpstreamPath with no query. Gemini
	// names model in the path either way, asks for SSE with alt=sse and
	// counts tokens at the model's :countTokens.
	MemberPath(ep neutral.Endpoint, model string, stream, translated bool, query string) (path, q string)
	// CollectsStreams reports whether the pool may ask a member of this API
	// for a stream and build the non-streamed answer from it
	// (stream_upstream): Anthropic and Chat.
	CollectsStreams() bool
	// StreamingBody returns body, a non-streamed request of this API,
	// asking for a stream whose events carry the token counts; an error
	// for an API whose CollectsStreams is false.
	StreamingBody(body []byte) ([]byte, error)
	// TokenCount is the answer of this API's token-counting endpoint for n
	// input tokens: the pool's estimate when the member speaks another API.
	TokenCount(n int) []byte
	// ModelList is the document of this API's model list (GET /v1/models,
	// Gemini's /v1beta/models) listing list with its capabilities; owner
	// is the pool id (OpenAI's owned_by).
	ModelList(list []config.ModelInfo, owner string) any
}

// byKind are the flavours by the wire API they read and write.
var byKind = map[apikind.Kind]Flavour{apikind.Anthropic: anthropic.Flavour{}, apikind.Chat: chat.Flavour{},
	apikind.Responses: responses.Flavour{}, apikind.Gemini: gemini.Flavour{}}

// For returns the flavour of wire API k, or nil for a Kind that is none of
// the four.
func For(k apikind.Kind) Flavour { return byKind[k] }

// must is For(k) for the codec's entry points, which are only ever given
// one of the four kinds.
func must(k apikind.Kind) Flavour {
	if f := byKind[k]; f != nil {
		return f
	}
	panic("api: unknown API " + string(k))
}

// byChannel are the flavours of pools by their channel api word.
var byChannel = map[string]Flavour{config.APIAnthropic: anthropic.Flavour{}, config.APIOpenAI: chat.Flavour{},
	config.APIOpenAIChat: chat.Flavour{}, config.APIGemini: gemini.Flavour{}}

// ForChannel returns the flavour serving a pool whose channels speak api (a
// config.API* word), or nil when this build has none.
func ForChannel(api string) Flavour { return byChannel[api] }

// MemberKind is the API a member whose channel speaks channelAPI is sent a
// call of API client in: its own when it speaks the client's; an `openai`
// channel (Chat and Responses) takes Chat for Anthropic and Gemini clients,
// the API most OpenAI-compatible servers share.
func MemberKind(channelAPI string, client apikind.Kind) apikind.Kind {
	switch channelAPI {
	case config.APIOpenAI:
		if client == apikind.Responses {
			return apikind.Responses
		}
		return apikind.Chat
	case config.APIOpenAIChat:
		return apikind.Chat
	case config.APIGemini:
		return apikind.Gemini
	}
	return apikind.Anthropic
}

// FitChannel drops from r, a request the pool translated for a member
// whose channel speaks channelAPI, the sampling hints that member's API has
// no place for. They are hints, not meaning: leaving one out beats skipping
// the member or refusing the call (SPEC POOL-25). top_k (Gemini CLI sends
// generationConfig.topK on every call, Anthropic clients may send top_k)
// is left out for an `openai` channel: OpenAI's Chat Completions reference
// lists no top_k, and its API answers an argument it does not know with
// 400 invalid_request_error "Unrecognized request argument supplied:
// top_k". An `openai-chat` channel keeps it (vLLM and Ollama document it).
// A same-API call is passthrough and never comes here: a Chat client's own
// top_k reaches an `openai` member as the client sent it.
func FitChannel(channelAPI string, r *neutral.Request) {
	if channelAPI == config.APIOpenAI {
		r.TopK = nil
	}
}
