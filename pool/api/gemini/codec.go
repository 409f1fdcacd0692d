package gemini

import (
	"strings"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

// The codec to and from the neutral model: the Flavour
// methods over this package's decoders and encoders.

// UpstreamPath is the generateContent path of model, streamed or not
// (geminiPath without its query).
func (Flavour) UpstreamPath(model string, stream bool) string {
	return strings.SplitN(geminiPath(model, stream), "?", 2)[0]
}

// DecodeRequest reads a generateContent body of model (from the URL),
// streamed or not.
func (Flavour) DecodeRequest(body []byte, model string, stream, valid bool) (*neutral.Request, error) {
	return decodeRequest(body, model, stream, valid)
}

// EncodeRequest writes r as a generateContent body.
func (Flavour) EncodeRequest(r *neutral.Request) ([]byte, error) { return encodeGeminiRequest(r) }

// DecodeResponse reads a generateContent answer.
func (Flavour) DecodeResponse(body []byte) (*neutral.Response, error) {
	return decodeGeminiResponse(body)
}

// EncodeResponse writes r as a generateContent answer naming model.
func (Flavour) EncodeResponse(r *neutral.Response, model string, _ []string) ([]byte, error) {
	return encodeGeminiResponse(r, model)
}

// NewStreamDecoder returns a decoder of one streamGenerateContent stream.
func (Flavour) NewStreamDecoder() neutral.StreamDecoder { return &geminiStreamDecoder{} }

// NewStreamEncoder returns an encoder of one streamGenerateContent stream
// naming model.
func (Flavour) NewStreamEncoder(model string, _ []string) neutral.StreamEncoder {
	return &geminiStreamEncoder{Model: model}
}

// EncodeError renders e as a Gemini error document and its status.
func (Flavour) EncodeError(e neutral.Error) (int, []byte) { return encodeGeminiError(e) }

// EncodeErrorEvent renders e as a data event holding the error document.
func (Flavour) EncodeErrorEvent(e neutral.Error) []byte {
	_, body := encodeGeminiError(e)
	return wirefmt.SSE("", body)
}
