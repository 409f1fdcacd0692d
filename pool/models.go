package pool

import (
	"encoding/json"
	"io"
	"net/http"

	"github.com/dual-proxy/dual-proxy/pool/api"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// serveModels answers GET /pool/{pool}/v1/models with the unified models
// and their merged capabilities: for Anthropic pools
// in the Anthropic list shape (data, has_more, first_id, last_id), for
// OpenAI pools in the OpenAI list shape (object "list", data of object
// "model" with created and owned_by = the pool id); both entries carry the
// config.ModelInfo fields (context_window, max_tokens, input, efforts).
func (p *Pool) serveModels(w http.ResponseWriter, r *http.Request, cfg *config.Config, pc *config.PoolConfig, fl api.Flavour) {
	list := config.ModelListFetched(cfg, pc, p.lists.get(r.Context(), p, cfg, pc))
	w.Header().Set("Content-Type", "application/json")
	if fl.API() == apikind.Gemini {
		_ = json.NewEncoder(w).Encode(geminiModels(list))
		return
	}
	if fl.API() != apikind.Anthropic {
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
			doc.Data = append(doc.Data, entry{Object: "model", ModelInfo: m, OwnedBy: pc.ID})
		}
		_ = json.NewEncoder(w).Encode(doc)
		return
	}
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
	_ = json.NewEncoder(w).Encode(doc)
}

// drain discards up to 64 KiB so the connection can be reused.
func drain(rc io.ReadCloser) {
	_, _ = io.CopyN(io.Discard, rc, 64<<10)
	_ = rc.Close()
}
