package status

import (
	"bytes"
	_ "embed"
	"net/http"

	"github.com/dual-proxy/dual-proxy/pool/editor"
	"github.com/dual-proxy/dual-proxy/pool/wire"
)

// pageHTML is the pool status page (SPEC POOL-13): a self-contained HTML
// document (no external resources) that polls GET /pool/status every 2 s and
// renders pools, members (state, cooldown, counts, bound sessions, cache hit
// ratio), per-session bindings, the last 200 calls, and a test button per
// unified model that calls POST /pool/{pool}/test?model=M (POOL-14).
//
// The test endpoint needs the pool token like every /pool/{pool}/… path.
// The page reads it from its URL fragment — /pool/#token=T — which browsers
// never send to the server or put in Referer headers. Page options in the
// query: autotest=MODEL (and optionally autopool=POOL) clicks that model's
// test button once after the first render (used by the headless browser
// test); the document's data-autotest attribute becomes "done" when the
// test's result is shown.
//
//go:embed page.html
var pageHTML []byte

// ServePage answers GET/HEAD /pool/ with pageHTML. It holds no data; the
// data comes from /pool/status (no secrets) and needs no token. With
// editing set, the editor's section (editor.Section: its own markup, style
// and script, SPEC POOL-22) is added before </body>.
func ServePage(w http.ResponseWriter, r *http.Request, editing bool) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		wire.WriteError(w, wire.AnthropicFlavour{}, http.StatusMethodNotAllowed, "use GET", nil)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	// Inline script and style only; fetches go to this origin.
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	if !editing {
		_, _ = w.Write(pageHTML)
		return
	}
	i := bytes.LastIndex(pageHTML, []byte("</body>"))
	if i < 0 {
		i = len(pageHTML)
	}
	_, _ = w.Write(pageHTML[:i])
	_, _ = w.Write(editor.Section)
	_, _ = w.Write(pageHTML[i:])
}
