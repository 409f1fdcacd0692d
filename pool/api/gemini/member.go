package gemini

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// What the pool asks of a call sent to a Gemini member, and the answers it
// writes itself in Gemini's shapes.

// SetTranslatedHeaders sets nothing: the Gemini API requires no header of
// its own.
func (Flavour) SetTranslatedHeaders(http.Header) {}

// MemberPath names the target model in the path (one escaped segment),
// passthrough or not:
// :countTokens keeps the client's query; generateContent and
// streamGenerateContent keep it for passthrough only and ask for SSE with
// alt=sse when streamed.
func (f Flavour) MemberPath(ep neutral.Endpoint, model string, stream, translated bool, query string) (string, string) {
	if ep.Kind == neutral.EpCountTokens {
		return "/v1beta/models/" + modelSegment(model) + ":countTokens", query
	}
	path := f.UpstreamPath(model, stream)
	if translated {
		query = ""
	}
	if stream && !strings.Contains(query, "alt=sse") {
		query = strings.TrimPrefix(query+"&alt=sse", "&")
	}
	return path, query
}

// CollectsStreams is false: a Gemini member is asked as the client asked.
func (Flavour) CollectsStreams() bool { return false }

// StreamingBody fails: the pool builds no Gemini answer from a stream.
func (Flavour) StreamingBody([]byte) ([]byte, error) {
	return nil, errors.New("gemini: the pool builds no answer from a Gemini stream")
}

// TokenCount is countTokens' answer, {"totalTokens": n}.
func (Flavour) TokenCount(n int) []byte { return fmt.Appendf(nil, `{"totalTokens":%d}`, n) }

// ModelList is the Gemini models list (GET /v1beta/models): each model's
// name, limits and the generation methods the pool serves.
func (Flavour) ModelList(list []config.ModelInfo, _ string) any {
	type model struct {
		Name             string   `json:"name"`
		DisplayName      string   `json:"displayName"`
		InputTokenLimit  int      `json:"inputTokenLimit,omitempty"`
		OutputTokenLimit int      `json:"outputTokenLimit,omitempty"`
		Methods          []string `json:"supportedGenerationMethods"`
	}
	doc := struct {
		Models []model `json:"models"`
	}{Models: []model{}}
	for _, m := range list {
		doc.Models = append(doc.Models, model{Name: "models/" + m.ID, DisplayName: m.ID, InputTokenLimit: m.ContextWindow,
			OutputTokenLimit: m.MaxTokens, Methods: []string{"generateContent", "streamGenerateContent", "countTokens"}})
	}
	return doc
}
