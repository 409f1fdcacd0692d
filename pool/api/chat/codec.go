package chat

import (
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

// The codec to and from the neutral model: the Flavour
// methods over this package's decoders and encoders.

// UpstreamPath is the Chat Completions endpoint.
func (Flavour) UpstreamPath(string, bool) string { return "/v1/chat/completions" }

// DecodeRequest reads a Chat Completions body; model and stream are the
// body's.
func (Flavour) DecodeRequest(body []byte, _ string, _, valid bool) (*neutral.Request, error) {
	return decodeRequest(body, valid)
}

// EncodeRequest writes r as a Chat Completions body.
func (Flavour) EncodeRequest(r *neutral.Request) ([]byte, error) { return encodeChatRequest(r) }

// DecodeResponse reads a Chat Completions answer.
func (Flavour) DecodeResponse(body []byte) (*neutral.Response, error) {
	return decodeChatResponse(body)
}

// EncodeResponse writes r as a Chat Completions answer naming model.
func (Flavour) EncodeResponse(r *neutral.Response, model string, _ []string) ([]byte, error) {
	return encodeChatResponse(r, model)
}

// NewStreamDecoder returns a decoder of one Chat Completions stream.
func (Flavour) NewStreamDecoder() neutral.StreamDecoder { return newChatStreamDecoder() }

// NewStreamEncoder returns an encoder of one Chat Completions stream naming
// Model.
func (Flavour) NewStreamEncoder(model string, _ []string) neutral.StreamEncoder {
	return &chatStreamEncoder{Model: model}
}

// EncodeError renders e as an OpenAI error document and its status.
func (Flavour) EncodeError(e neutral.Error) (int, []byte) { return EncodeOpenAIError(e) }

// EncodeErrorEvent renders e as a data event holding the error document.
func (Flavour) EncodeErrorEvent(e neutral.Error) []byte {
	_, body := EncodeOpenAIError(e)
	return wirefmt.SSE("", body)
}

// SignatureKeys: Chat Completions carries no reasoning signatures.
func (Flavour) SignatureKeys([]byte) ([]string, bool) { return nil, false }

// StripSignatures: Chat Completions carries no reasoning signatures; body
// as is.
func (Flavour) StripSignatures(body []byte, _ func(string) bool) []byte { return body }
