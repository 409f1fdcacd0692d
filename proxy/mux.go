package proxy

import (
	"encoding/json"
	"html"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dual-proxy/dual-proxy/proxy/statusdoc"
)

// StatusHandler serves the status endpoints of s (statusdoc.Handler with
// Server.Status; SPEC OPS-2). The Host header must be an IP literal,
// "localhost" or a name under ".localhost" (else 421, DNS rebinding).
func (s *Server) StatusHandler() http.Handler { return statusdoc.Handler(s.Status) }

// Status is Engine.Status with the addresses the server accepts on,
// sorted.
func (s *Server) Status() statusdoc.Status {
	st := s.engine.Status()
	s.mu.Lock()
	for ln := range s.listeners {
		st.Listeners = append(st.Listeners, ln.Addr().String())
	}
	s.mu.Unlock()
	slices.Sort(st.Listeners)
	return st
}

// Mux is the http.Handler for the proxy's own origin-form endpoints
// (SPEC HTTP-1): the status endpoints of an attached Server (see StatusHandler)
// plus whatever is mounted with Handle (the model pool under "/pool/").
// Because Config.Handler is fixed when the server is created, the Mux is
// created first and the server attached after New:
//
//	mux := proxy.NewMux()
//	mux.Handle("/pool/", pool) // optional
//	cfg.Handler = mux
//	srv, err := proxy.New(cfg)
//	mux.Attach(srv)
//
// Until a server is attached the status endpoints answer 503. Safe for
// concurrent use; Handle and Attach may be called while serving.
type Mux struct {
	mux *http.ServeMux
	srv atomic.Pointer[Server]

	mu      sync.Mutex
	mounted map[string]bool // patterns given to Handle, for the index
}

// NewMux returns a Mux serving the status endpoints and the index at "/".
func NewMux() *Mux {
	m := &Mux{mux: http.NewServeMux(), mounted: map[string]bool{}}
	m.mux.Handle("/{$}", statusdoc.LocalOnly(http.HandlerFunc(m.serveIndex)))
	status := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := m.srv.Load()
		if s == nil {
			http.Error(w, "status not available yet", http.StatusServiceUnavailable)
			return
		}
		s.StatusHandler().ServeHTTP(w, r)
	})
	m.mux.Handle("/_dual-proxy/", status)
	m.mux.Handle("/_dual-proxy", status)
	return m
}

// Attach makes the status endpoints report s. A later call replaces the
// server.
func (m *Mux) Attach(s *Server) { m.srv.Store(s) }

// Handle mounts h for pattern (http.ServeMux syntax, e.g. "/pool/"). It
// panics, like http.ServeMux.Handle, when pattern conflicts with one
// already registered, including "/_dual-proxy/".
func (m *Mux) Handle(pattern string, h http.Handler) {
	m.mux.Handle(pattern, h)
	m.mu.Lock()
	m.mounted[pattern] = true
	m.mu.Unlock()
}

// ServeHTTP dispatches r by path; unknown paths get 404.
func (m *Mux) ServeHTTP(w http.ResponseWriter, r *http.Request) { m.mux.ServeHTTP(w, r) }

// IndexLink is one entry of the listener's index (`GET /`): a path on this
// listener and what it serves.
type IndexLink struct {
	Path  string `json:"path"`
	Title string `json:"title"`
}

// indexPages are the endpoints the index may point to, in its order: the
// status page and document always, the others when mounted under the
// pattern given (the pool, the metrics, the live settings).
var indexPages = []struct {
	pattern string // "" when always served
	IndexLink
}{
	{"", IndexLink{"/_dual-proxy/", "status page: candidates, cooldowns, health, recent decisions"}},
	{"", IndexLink{"/_dual-proxy/status", "status document (JSON)"}},
	{"/pool/", IndexLink{"/pool/", "model pool page: members, cooldowns, sessions, recent calls"}},
	{"/metrics", IndexLink{"/metrics", "Prometheus metrics"}},
	{"/_dual-proxy/settings", IndexLink{"/_dual-proxy/settings", "live settings (JSON; changed with dual-proxy settings or the status page)"}},
}

// Index lists the endpoints served on this listener, in indexPages' order.
func (m *Mux) Index() []IndexLink {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []IndexLink
	for _, p := range indexPages {
		if p.pattern == "" || m.mounted[p.pattern] {
			out = append(out, p.IndexLink)
		}
	}
	return out
}

// serveIndex answers `GET /` on the listener: a small page
// linking the endpoints this listener serves, or with Accept:
// application/json the document {"name": "dual-proxy", "links": [{"path",
// "title"}]}. A person who opens the listener's address in a browser, or a
// script that asks it, finds the status page, the pool and the metrics
// instead of a bare 404. Other methods than GET and HEAD get 405.
func (m *Mux) serveIndex(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	links := m.Index()
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Add("Vary", "Accept")
	if wantsJSON(r.Header.Get("Accept")) {
		h.Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(struct {
			Name  string      `json:"name"`
			Links []IndexLink `json:"links"`
		}{"dual-proxy", links})
		return
	}
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	var b strings.Builder
	b.WriteString("<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>dual-proxy</title>" +
		"<style>body{font:15px system-ui,sans-serif;margin:2em}li{margin:.4em 0}code{font-size:14px}</style></head>\n" +
		"<body><h1>dual-proxy</h1><p>This is a forwarding proxy's listener: point HTTP_PROXY and HTTPS_PROXY here. Its own pages:</p><ul>\n")
	for _, l := range links {
		b.WriteString(`<li><a href="` + html.EscapeString(l.Path) + `"><code>` + html.EscapeString(l.Path) + `</code></a> ` + html.EscapeString(l.Title) + "</li>\n")
	}
	b.WriteString("</ul></body></html>\n")
	w.Write([]byte(b.String()))
}

// wantsJSON reports whether an Accept header asks for JSON before HTML:
// application/json (or any +json type) listed, and text/html not listed
// before it. Quality values are not weighed: clients that want JSON list
// it alone.
func wantsJSON(accept string) bool {
	for _, part := range strings.Split(accept, ",") {
		mt, _, _ := strings.Cut(strings.TrimSpace(part), ";")
		mt = strings.ToLower(strings.TrimSpace(mt))
		switch {
		case mt == "text/html":
			return false
		case mt == "application/json" || strings.HasSuffix(mt, "+json"):
			return true
		}
	}
	return false
}
