package statusdoc

import (
	_ "embed"
	"encoding/json"
	"net/http"

	"github.com/dual-proxy/dual-proxy/internal/lib/webguard"
)

// Paths of the proxy's own status endpoints (origin-form on the proxy
// listener).
const (
	StatusPath = "/_dual-proxy/status"    // JSON document (Status)
	PagePath   = "/_dual-proxy/"          // HTML page
	ScriptPath = "/_dual-proxy/status.js" // the page's script
)

// statusPage is the status page: one HTML file with inline CSS, no
// external assets and no build step. It loads two scripts from its own
// origin: ScriptPath, which fetches StatusPath every 2 s and renders it,
// and the settings form (/_dual-proxy/settings/form.js, served by
// internal/app/settings where the instance mounts the settings;
// without that mount the page shows no form).
//
//go:embed status.html
var statusPage []byte

// statusScript is the page's script, served at ScriptPath.
//
//go:embed status.js
var statusScript []byte

// Page returns the embedded status page as served at PagePath (callers
// must not modify it).
func Page() []byte { return statusPage }

// pageCSP forbids every external load and every inline script: the page
// may only run scripts served by the proxy itself, use its inline style
// and fetch from the proxy.
const pageCSP = "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the status endpoints with the document status returns:
//
//	GET  /_dual-proxy/status     200 application/json, the Status document
//	GET  /_dual-proxy/           200 text/html, the status page
//	GET  /_dual-proxy/status.js  200 text/javascript, the page's script
//	GET  /_dual-proxy            308 to /_dual-proxy/
//
// HEAD is answered like GET without a body; other methods get 405. Other
// paths get 404. The Host header must be an IP literal, "localhost" or a
// name under ".localhost", with the listener's port when it names one
// (else 421; webguard.ListenerHost): a web page that points its own DNS
// name at 127.0.0.1 (DNS rebinding) cannot read the host names this
// proxy visited.
func Handler(status func() Status) http.Handler {
	return &statusHandler{status: status}
}

type statusHandler struct {
	status func() Status
}

func (h *statusHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !webguard.ListenerHost(r) {
		http.Error(w, "status pages answer only to an IP address or localhost in the Host header", http.StatusMisdirectedRequest)
		return
	}
	var serve func()
	switch r.URL.Path {
	case "/_dual-proxy":
		serve = func() { http.Redirect(w, r, PagePath, http.StatusPermanentRedirect) }
	case PagePath:
		serve = func() {
			hd := w.Header()
			hd.Set("Content-Type", "text/html; charset=utf-8")
			hd.Set("Content-Security-Policy", pageCSP)
			hd.Set("X-Content-Type-Options", "nosniff")
			hd.Set("Cache-Control", "no-store")
			hd.Set("Referrer-Policy", "no-referrer")
			w.Write(statusPage)
		}
	case ScriptPath:
		serve = func() {
			hd := w.Header()
			hd.Set("Content-Type", "text/javascript; charset=utf-8")
			hd.Set("X-Content-Type-Options", "nosniff")
			hd.Set("Cache-Control", "no-store")
			w.Write(statusScript)
		}
	case StatusPath, StatusPath + "/":
		serve = func() {
			b, err := json.MarshalIndent(h.status(), "", "  ")
			if err != nil {
				http.Error(w, "status: "+err.Error(), http.StatusInternalServerError)
				return
			}
			hd := w.Header()
			hd.Set("Content-Type", "application/json")
			hd.Set("X-Content-Type-Options", "nosniff")
			hd.Set("Cache-Control", "no-store")
			w.Write(append(b, '\n'))
		}
	default:
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "use GET", http.StatusMethodNotAllowed)
		return
	}
	serve()
}

// LocalOnly serves h only to requests whose Host header is an IP literal,
// localhost or a name under .localhost with the listener's port, like the
// status endpoints (421
// otherwise, DNS rebinding); the metrics endpoint uses it.
func LocalOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !webguard.ListenerHost(r) {
			http.Error(w, "this endpoint answers only to an IP address or localhost in the Host header", http.StatusMisdirectedRequest)
			return
		}
		h.ServeHTTP(w, r)
	})
}
