package pool

import (
	"encoding/json"
	"io"
	"net/http"

	"github.com/dual-proxy/dual-proxy/pool/api"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// serveModels answers GET /pool/{pool}/v1/models (Gemini's /v1beta/models)
// with the unified models and their merged capabilities in the list shape
// of the client's API (Flavour.ModelList): Anthropic's (data, has_more,
// first_id, last_id), OpenAI's (object "list", data of object "model" with
// created and owned_by = the pool id), both entries with the
// config.ModelInfo fields (context_window, max_tokens, input, efforts), or
// Gemini's.
func (p *Pool) serveModels(w http.ResponseWriter, r *http.Request, cfg *config.Config, pc *config.PoolConfig, fl api.Flavour) {
	list := config.ModelListFetched(cfg, pc, p.lists.get(r.Context(), p, cfg, pc))
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(fl.ModelList(list, pc.ID))
}

// drain discards up to 64 KiB so the connection can be reused.
func drain(rc io.ReadCloser) {
	_, _ = io.CopyN(io.Discard, rc, 64<<10)
	_ = rc.Close()
}
