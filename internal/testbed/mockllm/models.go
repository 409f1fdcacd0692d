package mockllm

import (
	"net/http"
	"slices"
	"strings"
)

// DefaultModel is the one model a channel lists when it declares none
// (no Models, no Limits).
const DefaultModel = "mock-model"

// isModelList reports whether a GET of path asks api's model list:
// /v1/models (Anthropic, OpenAI; /models under a base URL that ends in
// /v1) or /v1beta/models (Gemini) — what agents, the pool's /v1/models
// and the configuration editor ask a channel.
func isModelList(api string, r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	if api == Gemini {
		return strings.HasSuffix(r.URL.Path, "/v1beta/models")
	}
	return strings.HasSuffix(r.URL.Path, "/models")
}

// modelIDs are the models the channel declares: Models in order, then
// the other models of Limits sorted; DefaultModel when there are none.
func (c *Channel) modelIDs() []string {
	ids := slices.Clone(c.Models)
	var more []string
	for id := range c.Limits {
		if !slices.Contains(ids, id) {
			more = append(more, id)
		}
	}
	slices.Sort(more)
	ids = append(ids, more...)
	if len(ids) == 0 {
		ids = []string{DefaultModel}
	}
	return ids
}

// modelList is the answer to a GET of the model list in api's shape:
// Gemini's {"models": [{"name": "models/ID", …}]}, else the
// Anthropic/OpenAI {"data": [{"id": "ID", …}]}; a model with a declared
// output limit carries it (max_tokens, Gemini's outputTokenLimit), which
// the pool reads as the model's limit.
func (c *Channel) modelList(api string) any {
	ids := c.modelIDs()
	if api == Gemini {
		models := make([]any, 0, len(ids))
		for _, id := range ids {
			m := map[string]any{"name": "models/" + id, "displayName": id,
				"supportedGenerationMethods": []string{"generateContent", "streamGenerateContent", "countTokens"}}
			if n, ok := c.Limits[id]; ok {
				m["outputTokenLimit"] = n
			}
			models = append(models, m)
		}
		return map[string]any{"models": models}
	}
	data := make([]any, 0, len(ids))
	for _, id := range ids {
		m := map[string]any{"id": id, "object": "model", "type": "model", "created": 0, "owned_by": "mock", "display_name": id}
		if n, ok := c.Limits[id]; ok {
			m["max_tokens"] = n
		}
		data = append(data, m)
	}
	return map[string]any{"object": "list", "has_more": false, "data": data}
}
