package api

import (
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
)

// DecodeRequest reads a client request body of api. For apikind.Gemini, model and
// stream come from the URL; the other APIs read them from the body and
// ignore the arguments.
func DecodeRequest(api apikind.Kind, body []byte, model string, stream bool) (*neutral.Request, error) {
	return must(api).DecodeRequest(body, model, stream, false)
}

// DecodeValidRequest is DecodeRequest of a body known to be valid JSON (the
// pool's, which ParseRequest validated and accepted): it is not
// validated again, only decoded: the body is decoded once. A body that is
// not valid JSON must not be passed: it is read without panicking, but
// need not be refused.
func DecodeValidRequest(api apikind.Kind, body []byte, model string, stream bool) (*neutral.Request, error) {
	return must(api).DecodeRequest(body, model, stream, true)
}

// EncodeRequest writes r as a request body of api (for apikind.Gemini the model
// and stream belong in the URL: Flavour.UpstreamPath).
func EncodeRequest(api apikind.Kind, r *neutral.Request) ([]byte, error) {
	return must(api).EncodeRequest(r)
}

// DecodeResponse reads a non-streamed answer body of api.
func DecodeResponse(api apikind.Kind, body []byte) (*neutral.Response, error) {
	return must(api).DecodeResponse(body)
}

// EncodeResponse writes r as a non-streamed answer of api naming the model
// the member's answer names (r.Model), as a same-API answer passed through
// byte for byte does, or model (the id the member was asked
// for) when it names none; custom names the request's freeform tools
// (Request.CustomTools), whose calls a Responses client gets as
// custom_tool_call items.
func EncodeResponse(api apikind.Kind, r *neutral.Response, model string, custom ...string) ([]byte, error) {
	if r.Model != "" {
		model = r.Model
	}
	return must(api).EncodeResponse(r, model, custom)
}

// NewStreamDecoder returns a decoder for streams of api.
func NewStreamDecoder(api apikind.Kind) neutral.StreamDecoder {
	return must(api).NewStreamDecoder()
}

// NewStreamEncoder returns an encoder writing streams of api. The client's
// events name the model the member's stream names at its start (Anthropic
// message_start, the first Chat chunk, Responses response.created, Gemini
// modelVersion), as a same-API stream passed through byte for byte does; model,
// the id the member was asked for, when it names none. custom names the
// request's freeform tools (Request.CustomTools).
func NewStreamEncoder(api apikind.Kind, model string, custom ...string) neutral.StreamEncoder {
	return must(api).NewStreamEncoder(model, custom)
}

// LowerLimit returns body, a request of API api, with each output limit
// above limit (tokens) set to limit, every other byte as the client sent it
// (SPEC POOL-25; Flavour.LowerLimit).
func LowerLimit(api apikind.Kind, body []byte, limit int) []byte {
	return must(api).LowerLimit(body, limit)
}
