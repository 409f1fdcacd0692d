package proxy

import (
	"net/http"
	"sync/atomic"

	"github.com/dual-proxy/dual-proxy/proxy/statusdoc"
)

// StatusHandler serves the status endpoints of s (statusdoc.Handler with
// Server.Status; SPEC OPS-2). The Host header must be an IP literal,
// "localhost" or a name under ".localhost" (else 421, DNS rebinding).
func (s *Server) StatusHandler() http.Handler { return statusdoc.Handler(s.Status) }

// Mux is the http.Handler for the proxy's own origin-form endpoints (SPEC
// HTTP-1): the status endpoints of an attached Server (see StatusHandler)
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
}

// NewMux returns a Mux serving the status endpoints.
func NewMux() *Mux {
	m := &Mux{mux: http.NewServeMux()}
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
func (m *Mux) Handle(pattern string, h http.Handler) { m.mux.Handle(pattern, h) }

// ServeHTTP dispatches r by path; unknown paths get 404.
func (m *Mux) ServeHTTP(w http.ResponseWriter, r *http.Request) { m.mux.ServeHTTP(w, r) }
