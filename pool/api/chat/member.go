package chat

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// What the pool asks of a call sent to a Chat Completions member, and the
// answers it writes itself in OpenAI's shapes.

// SetTranslatedHeaders sets nothing: Chat Completions requires no header
// of its own.
func (Flavour) SetTranslatedHeaders(http.Header) {}

// MemberPath is the client's path and query for passthrough, else
// /v1/chat/completions with no query.
func (f Flavour) MemberPath(ep neutral.Endpoint, model string, stream, translated bool, query string) (string, string) {
	if !translated {
		return ep.Upstream, query
	}
	return f.UpstreamPath(model, stream), ""
}

// CollectsStreams is true: a Chat stream is built into a Chat answer.
func (Flavour) CollectsStreams() bool { return true }

// StreamingBody sets "stream": true and stream_options.include_usage, so
// the stream's last chunk carries the token counts.
func (Flavour) StreamingBody(body []byte) ([]byte, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, err
	}
	doc["stream"] = json.RawMessage("true")
	opts := map[string]json.RawMessage{}
	if raw, ok := doc["stream_options"]; ok {
		_ = json.Unmarshal(raw, &opts)
	}
	opts["include_usage"] = json.RawMessage("true")
	b, err := json.Marshal(opts)
	if err != nil {
		return nil, err
	}
	doc["stream_options"] = b
	return json.Marshal(doc)
}

// TokenCount is {"input_tokens": n}, the count Responses' input_tokens
// endpoint names.
func (Flavour) TokenCount(n int) []byte { return fmt.Appendf(nil, `{"input_tokens":%d}`, n) }

// ModelList is OpenAI's list shape (object "list", data of object "model"
// with created and owned_by = owner) with the config.ModelInfo fields.
func (Flavour) ModelList(list []config.ModelInfo, owner string) any {
	type entry struct {
		Object string `json:"object"`
		config.ModelInfo
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	doc := struct {
		Object string  `json:"object"`
		Data   []entry `json:"data"`
	}{Object: "list", Data: []entry{}}
	for _, m := range list {
		doc.Data = append(doc.Data, entry{Object: "model", ModelInfo: m, OwnedBy: owner})
	}
	return doc
}
