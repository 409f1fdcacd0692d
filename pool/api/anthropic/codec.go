package anthropic

import (
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
)

// The codec to and from the neutral model: the Flavour
// methods over this package's decoders and encoders.

// UpstreamPath is the Messages endpoint.
func (Flavour) UpstreamPath(string, bool) string { return "/v1/messages" }

// DecodeRequest reads a Messages body; model and stream are the body's.
func (Flavour) DecodeRequest(body []byte, _ string, _, valid bool) (*neutral.Request, error) {
	return decodeRequest(body, valid)
}

// EncodeRequest writes r as a Messages body.
func (Flavour) EncodeRequest(r *neutral.Request) ([]byte, error) { return encodeAnthropicRequest(r) }

// DecodeResponse reads a Messages answer.
func (Flavour) DecodeResponse(body []byte) (*neutral.Response, error) {
	return decodeAnthropicResponse(body)
}

// EncodeResponse writes r as a Messages answer naming model.
func (Flavour) EncodeResponse(r *neutral.Response, model string, _ []string) ([]byte, error) {
	return encodeAnthropicResponse(r, model)
}

// NewStreamDecoder returns a decoder of one Messages stream.
func (Flavour) NewStreamDecoder() neutral.StreamDecoder { return &anthropicStreamDecoder{} }

// NewStreamEncoder returns an encoder of one Messages stream naming model.
func (Flavour) NewStreamEncoder(model string, _ []string) neutral.StreamEncoder {
	return &anthropicStreamEncoder{Model: model}
}

// EncodeError renders e as a Messages error document and its status.
func (Flavour) EncodeError(e neutral.Error) (int, []byte) { return encodeAnthropicError(e) }

// EncodeErrorEvent renders e as a Messages "event: error".
func (Flavour) EncodeErrorEvent(e neutral.Error) []byte { return anthropicErrorEvent(e) }
