package api

import (
	"github.com/dual-proxy/dual-proxy/pool/api/anthropic"
	"github.com/dual-proxy/dual-proxy/pool/api/chat"
	"github.com/dual-proxy/dual-proxy/pool/api/gemini"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/responses"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
)

// DecodeRequest reads a client request body of api. For apikind.Gemini, model and
// stream come from the URL; the other APIs read them from the body and
// ignore the arguments.
func DecodeRequest(api apikind.Kind, body []byte, model string, stream bool) (*neutral.Request, error) {
	return decodeRequest(api, body, model, stream, false)
}

// DecodeValidRequest is DecodeRequest of a body known to be valid JSON (the
// pool's, which ParseRequest validated and accepted): it is not
// validated again, only decoded: the body is decoded once. A body that is
// not valid JSON must not be passed: it is read without panicking, but
// need not be refused.
func DecodeValidRequest(api apikind.Kind, body []byte, model string, stream bool) (*neutral.Request, error) {
	return decodeRequest(api, body, model, stream, true)
}

func decodeRequest(api apikind.Kind, body []byte, model string, stream, valid bool) (*neutral.Request, error) {
	switch api {
	case apikind.Anthropic:
		return anthropic.DecodeRequest(body, valid)
	case apikind.Chat:
		return chat.DecodeRequest(body, valid)
	case apikind.Responses:
		return responses.DecodeRequest(body, valid)
	case apikind.Gemini:
		return gemini.DecodeRequest(body, model, stream, valid)
	}
	panic("translate: unknown API " + string(api))
}

// EncodeRequest writes r as a request body of api (for apikind.Gemini the model
// and stream belong in the URL: GeminiPath).
func EncodeRequest(api apikind.Kind, r *neutral.Request) ([]byte, error) {
	switch api {
	case apikind.Anthropic:
		return anthropic.EncodeAnthropicRequest(r)
	case apikind.Chat:
		return chat.EncodeChatRequest(r)
	case apikind.Responses:
		return responses.EncodeResponsesRequest(r)
	case apikind.Gemini:
		return gemini.EncodeGeminiRequest(r)
	}
	panic("translate: unknown API " + string(api))
}

// DecodeResponse reads a non-streamed answer body of api.
func DecodeResponse(api apikind.Kind, body []byte) (*neutral.Response, error) {
	switch api {
	case apikind.Anthropic:
		return anthropic.DecodeAnthropicResponse(body)
	case apikind.Chat:
		return chat.DecodeChatResponse(body)
	case apikind.Responses:
		return responses.DecodeResponsesResponse(body)
	case apikind.Gemini:
		return gemini.DecodeGeminiResponse(body)
	}
	panic("translate: unknown API " + string(api))
}

// EncodeResponse writes r as a non-streamed answer of api naming the model
// the member's answer names (r.Model), as a same-API answer passed through
// byte for byte does (SPEC POOL-21), or model (the id the member was asked
// for) when it names none; custom names the request's freeform tools
// (Request.CustomTools), whose calls a Responses client gets as
// custom_tool_call items.
func EncodeResponse(api apikind.Kind, r *neutral.Response, model string, custom ...string) ([]byte, error) {
	if r.Model != "" {
		model = r.Model
	}
	switch api {
	case apikind.Anthropic:
		return anthropic.EncodeAnthropicResponse(r, model)
	case apikind.Chat:
		return chat.EncodeChatResponse(r, model)
	case apikind.Responses:
		return responses.EncodeResponsesResponse(r, model, custom...)
	case apikind.Gemini:
		return gemini.EncodeGeminiResponse(r, model)
	}
	panic("translate: unknown API " + string(api))
}

// NewStreamDecoder returns a decoder for streams of api.
func NewStreamDecoder(api apikind.Kind) neutral.StreamDecoder {
	switch api {
	case apikind.Anthropic:
		return &anthropic.AnthropicStreamDecoder{}
	case apikind.Chat:
		return chat.NewChatStreamDecoder()
	case apikind.Responses:
		return responses.NewResponsesStreamDecoder()
	case apikind.Gemini:
		return &gemini.GeminiStreamDecoder{}
	}
	panic("translate: unknown API " + string(api))
}

// NewStreamEncoder returns an encoder writing streams of api. The client's
// events name the model the member's stream names at its start (Anthropic
// message_start, the first Chat chunk, Responses response.created, Gemini
// modelVersion), as a same-API stream passed through byte for byte does
// (SPEC POOL-21); model, the id the member was asked for, when it names
// none. custom names the request's freeform tools (Request.CustomTools).
func NewStreamEncoder(api apikind.Kind, model string, custom ...string) neutral.StreamEncoder {
	switch api {
	case apikind.Anthropic:
		return &anthropic.AnthropicStreamEncoder{Model: model}
	case apikind.Chat:
		return &chat.ChatStreamEncoder{Model: model}
	case apikind.Responses:
		return responses.NewResponsesStreamEncoder(model, custom)
	case apikind.Gemini:
		return &gemini.GeminiStreamEncoder{Model: model}
	}
	panic("translate: unknown API " + string(api))
}
