package responses

import (
	"github.com/dual-proxy/dual-proxy/pool/api/chat"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
)

// The codec to and from the neutral model: the Flavour
// methods over this package's decoders and encoders.

// UpstreamPath is the Responses endpoint.
func (Flavour) UpstreamPath(string, bool) string { return "/v1/responses" }

// DecodeRequest reads a Responses body; model and stream are the body's.
func (Flavour) DecodeRequest(body []byte, _ string, _, valid bool) (*neutral.Request, error) {
	return decodeRequest(body, valid)
}

// EncodeRequest writes r as a Responses body.
func (Flavour) EncodeRequest(r *neutral.Request) ([]byte, error) { return encodeResponsesRequest(r) }

// DecodeResponse reads a Responses answer.
func (Flavour) DecodeResponse(body []byte) (*neutral.Response, error) {
	return decodeResponsesResponse(body)
}

// EncodeResponse writes r as a Responses answer naming model; the calls of
// the freeform tools named in custom become custom_tool_call items.
func (Flavour) EncodeResponse(r *neutral.Response, model string, custom []string) ([]byte, error) {
	return encodeResponsesResponse(r, model, custom...)
}

// NewStreamDecoder returns a decoder of one Responses stream.
func (Flavour) NewStreamDecoder() neutral.StreamDecoder { return newResponsesStreamDecoder() }

// NewStreamEncoder returns an encoder of one Responses stream naming model;
// custom as for EncodeResponse.
func (Flavour) NewStreamEncoder(model string, custom []string) neutral.StreamEncoder {
	return newResponsesStreamEncoder(model, custom)
}

// EncodeError renders e as an OpenAI error document and its status.
func (Flavour) EncodeError(e neutral.Error) (int, []byte) { return chat.EncodeOpenAIError(e) }

// EncodeErrorEvent renders e as the "error" event with sequence number 0
// (a stream's own encoder numbers it after what it sent).
func (Flavour) EncodeErrorEvent(e neutral.Error) []byte {
	return (&responsesStreamEncoder{}).ErrorEvents(e)
}

// SignatureKeys: Responses carries encrypted reasoning, not signatures
// (its state keys: StripReasoning).
func (Flavour) SignatureKeys([]byte) ([]string, bool) { return nil, false }

// StripSignatures: Responses carries no reasoning signatures; body as is.
func (Flavour) StripSignatures(body []byte, _ func(string) bool) []byte { return body }
