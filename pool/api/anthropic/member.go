package anthropic

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// What the pool asks of a call sent to an Anthropic member, and the
// answers it writes itself in the Messages shapes.

// SetTranslatedHeaders sets the anthropic-version the Messages API
// requires when the client, of another API, sent none.
func (Flavour) SetTranslatedHeaders(h http.Header) {
	if h.Get("Anthropic-Version") == "" {
		h.Set("Anthropic-Version", "2023-06-01")
	}
}

// MemberPath is the client's path and query for passthrough, else
// /v1/messages with no query.
func (f Flavour) MemberPath(ep neutral.Endpoint, model string, stream, translated bool, query string) (string, string) {
	if !translated {
		return ep.Upstream, query
	}
	return f.UpstreamPath(model, stream), ""
}

// CollectsStreams is true: a Messages stream is built into a Messages
// answer.
func (Flavour) CollectsStreams() bool { return true }

// StreamingBody sets "stream": true; message_start and message_delta
// carry the token counts.
func (Flavour) StreamingBody(body []byte) ([]byte, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, err
	}
	doc["stream"] = json.RawMessage("true")
	return json.Marshal(doc)
}

// TokenCount is count_tokens' answer, {"input_tokens": n}.
func (Flavour) TokenCount(n int) []byte { return fmt.Appendf(nil, `{"input_tokens":%d}`, n) }

// ModelList is Anthropic's list shape (data, has_more, first_id, last_id),
// each entry of type "model" with the config.ModelInfo fields.
func (Flavour) ModelList(list []config.ModelInfo, _ string) any {
	type entry struct {
		Type string `json:"type"`
		config.ModelInfo
		CreatedAt string `json:"created_at"`
	}
	doc := struct {
		Data    []entry `json:"data"`
		HasMore bool    `json:"has_more"`
		FirstID string  `json:"first_id,omitempty"`
		LastID  string  `json:"last_id,omitempty"`
	}{Data: []entry{}}
	for _, m := range list {
		doc.Data = append(doc.Data, entry{Type: "model", ModelInfo: m, CreatedAt: "1970-01-01T00:00:00Z"})
	}
	if len(list) > 0 {
		doc.FirstID, doc.LastID = list[0].ID, list[len(list)-1].ID
	}
	return doc
}
