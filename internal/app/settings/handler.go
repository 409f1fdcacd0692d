package settings

import (
	"crypto/subtle"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/dual-proxy/dual-proxy/internal/lib/webguard"
)

// Path is the settings endpoint on the listener, beside the status
// document.
const Path = "/_dual-proxy/settings"

// ClientHeader names the kind of client in a change, for the log line and
// the counter: `dual-proxy settings` sends "cli", the status page "page";
// without it a change counts as "api".
const ClientHeader = "X-Dual-Proxy-Client"

// maxBody bounds the body of a change or a gateway test (bytes).
const maxBody = 1 << 20

// errTooLarge is readBody's error for a body over maxBody, answered 413.
var errTooLarge = fmt.Errorf("the body is larger than the limit of 1 MiB (%d bytes)", maxBody)

// readBody reads r's body of at most maxBody bytes. A larger one, announced
// by its Content-Length or found while reading, is errTooLarge, which the
// caller answers 413 Content Too Large (RFC 9110 §15.5.14) without reading
// the rest: http.MaxBytesReader has the connection closed after the
// answer. Other errors are the connection's.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.ContentLength > maxBody {
		return nil, errTooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, errTooLarge
	}
	return body, err
}

// bodyError answers the error of readBody: 413 for errTooLarge, else 400.
func bodyError(w http.ResponseWriter, err error) {
	if errors.Is(err, errTooLarge) {
		writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusBadRequest, map[string]any{"errors": []FieldError{{Message: "reading the body: " + err.Error()}}})
}

// Handler serves Path for l (all JSON):
//
//	GET  → 200 Document; ETag: "VERSION"
//	PUT  If-Match: VERSION, Authorization: Bearer TOKEN; body {KEY: VALUE, …}
//	     → 200 Document | 400 {errors: [{field, message}]} (nothing applied) |
//	       401 without the token | 409 {error, version} when VERSION is stale |
//	       413 {error} for a body over 1 MiB | 428 without If-Match
//
// Every request must carry a Host that is an IP address or localhost with
// the listener's port, digits only (else 421, DNS rebinding); a browser request from another origin or site is
// refused with 403 (webguard, as the pool editor). token is the instance's
// control token; "" refuses every change.
func Handler(l *Live, token string) http.Handler {
	return &handler{live: l, token: token}
}

type handler struct {
	live  *Live
	token string
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !webguard.ListenerHost(r) {
		writeJSON(w, http.StatusMisdirectedRequest, map[string]string{"error": "the settings answer only to an IP address or localhost with this listener's port in the Host header"})
		return
	}
	if why := webguard.Refusal(r, true); why != "" {
		writeJSON(w, http.StatusForbidden, map[string]string{"error": why})
		return
	}
	switch {
	case r.URL.Path == FormPath && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		hd := w.Header()
		hd.Set("Content-Type", "text/javascript; charset=utf-8")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Cache-Control", "no-store")
		_, _ = w.Write(formJS)
	case r.URL.Path == ProbePath && r.Method == http.MethodPost:
		h.probe(w, r)
	case r.URL.Path != Path:
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "unknown path; the settings are at " + Path})
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		h.get(w)
	case r.Method == http.MethodPut:
		h.put(w, r)
	default:
		w.Header().Set("Allow", "GET, HEAD, PUT")
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "use GET or PUT " + Path})
	}
}

// The form's script and the gateway test, under Path.
const (
	FormPath  = Path + "/form.js"
	ProbePath = Path + "/probe"
)

// formJS is the status page's settings form (form.js).
//
//go:embed form.js
var formJS []byte

// probe answers POST ProbePath {gateway} with {ok, latency_ms, target} or
// {ok: false, error}: a real request through that gateway alone
// (Options.Probe). It needs the token: it makes the instance connect out.
func (h *handler) probe(w http.ResponseWriter, r *http.Request) {
	if !h.authorized(r) {
		h.unauthorized(w)
		return
	}
	body, err := readBody(w, r)
	if err != nil {
		bodyError(w, err)
		return
	}
	var req struct {
		Gateway string `json:"gateway"`
	}
	if err := json.Unmarshal(body, &req); err != nil || strings.TrimSpace(req.Gateway) == "" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"errors": []FieldError{{Field: Gateway, Message: "want {\"gateway\": URL}"}}})
		return
	}
	target, latency, err := h.live.Probe(r.Context(), req.Gateway)
	var inv Invalid
	switch {
	case errors.As(err, &inv):
		writeJSON(w, http.StatusBadRequest, map[string]any{"errors": []FieldError(inv)})
	case err != nil:
		writeJSON(w, http.StatusOK, map[string]any{"ok": false, "target": target, "error": err.Error()})
	default:
		writeJSON(w, http.StatusOK, map[string]any{"ok": true, "target": target, "latency_ms": latency.Milliseconds()})
	}
}

// unauthorized answers 401 with where the token is.
func (h *handler) unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="dual-proxy settings"`)
	writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "missing or wrong control token (Authorization: Bearer TOKEN): `dual-proxy settings` finds it in the instance registry, `dual-proxy settings token` prints the page link with it; --control-token chooses it at start"})
}

func (h *handler) get(w http.ResponseWriter) {
	d := h.live.Document()
	w.Header().Set("ETag", `"`+d.Version+`"`)
	writeJSON(w, http.StatusOK, d)
}

func (h *handler) put(w http.ResponseWriter, r *http.Request) {
	if !h.authorized(r) {
		h.unauthorized(w)
		return
	}
	body, err := readBody(w, r)
	if err != nil {
		bodyError(w, err)
		return
	}
	var changes map[string]json.RawMessage
	if err = json.Unmarshal(body, &changes); err == nil && changes == nil {
		err = errors.New("want a JSON object of settings")
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"errors": []FieldError{{Message: "want a JSON object of settings {KEY: VALUE, …}: " + err.Error()}}})
		return
	}
	d, err := h.live.Change(r.Header.Get("If-Match"), changes, clientKind(r))
	var inv Invalid
	switch {
	case errors.As(err, &inv):
		writeJSON(w, http.StatusBadRequest, map[string]any{"errors": []FieldError(inv)})
	case errors.Is(err, ErrNoVersion):
		writeJSON(w, http.StatusPreconditionRequired, map[string]string{"error": err.Error()})
	case errors.Is(err, ErrFileRefused):
		writeJSON(w, http.StatusConflict, map[string]any{"error": err.Error(), "file_errors": d.FileErrors})
	case errors.Is(err, ErrStale):
		w.Header().Set("ETag", `"`+d.Version+`"`)
		writeJSON(w, http.StatusConflict, map[string]string{"error": err.Error(), "version": d.Version})
	case err != nil:
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "the change was not applied: " + err.Error()})
	default:
		w.Header().Set("ETag", `"`+d.Version+`"`)
		writeJSON(w, http.StatusOK, d)
	}
}

// authorized checks Authorization: Bearer TOKEN in constant time.
func (h *handler) authorized(r *http.Request) bool {
	if h.token == "" {
		return false
	}
	scheme, tok, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(h.token)) == 1
}

// clientKind is "cli" or "page" as ClientHeader says, else "api".
func clientKind(r *http.Request) string {
	switch v := strings.ToLower(r.Header.Get(ClientHeader)); v {
	case "cli", "page":
		return v
	}
	return "api"
}

// writeJSON answers v as indented JSON, not cached.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"encoding the answer"}`)
	}
	hd := w.Header()
	hd.Set("Content-Type", "application/json")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
