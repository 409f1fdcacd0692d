package responses

import (
	"errors"
	"net/http"

	"github.com/dual-proxy/dual-proxy/pool/api/chat"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// What the pool asks of a call sent to a Responses member, and the answers
// it writes itself in OpenAI's shapes.

// SetTranslatedHeaders sets nothing: Responses requires no header of its
// own.
func (Flavour) SetTranslatedHeaders(http.Header) {}

// MemberPath is the client's path and query for passthrough, else
// /v1/responses with no query.
func (f Flavour) MemberPath(ep neutral.Endpoint, model string, stream, translated bool, query string) (string, string) {
	if !translated {
		return ep.Upstream, query
	}
	return f.UpstreamPath(model, stream), ""
}

// CollectsStreams is false: a Responses member is asked as the client
// asked.
func (Flavour) CollectsStreams() bool { return false }

// StreamingBody fails: the pool builds no Responses answer from a stream.
func (Flavour) StreamingBody([]byte) ([]byte, error) {
	return nil, errors.New("responses: the pool builds no answer from a Responses stream")
}

// TokenCount is {"input_tokens": n}, the count of Responses' input_tokens
// endpoint.
func (Flavour) TokenCount(n int) []byte { return chat.Flavour{}.TokenCount(n) }

// ModelList is OpenAI's list shape, as Chat's.
func (Flavour) ModelList(list []config.ModelInfo, owner string) any {
	return chat.Flavour{}.ModelList(list, owner)
}
