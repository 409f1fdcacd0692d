// Package editor edits the pool's YAML configuration file for the /pool/
// page and for scripts (SPEC POOL-22): it hands out the file with its keys
// replaced by Placeholder and a version, validates an edited document
// naming every error's YAML path (POOL-3), saves it atomically with the
// file's comments and key order kept and the previous file kept as
// PATH.bak, applies it in place like SIGHUP (POOL-16), and gathers the
// models the members offer into proposed unified models (POOL-12).
//
// The package serves /pool/config…; the pool handler routes those paths
// here after its guard (token, browser origin, DNS rebinding; SPEC
// POOL-20). Keys never leave it: responses carry Placeholder, a
// Placeholder sent back means "keep the stored key" (POOL-15).
package editor

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"sync"

	"go.yaml.in/yaml/v3"
)

// MaxDocument bounds an edited document (bytes).
const MaxDocument = 1 << 20

// Options are the editor's collaborators.
type Options struct {
	// Path is the configuration file (the one --config or the default
	// path named, read by the standalone proxy or by the launcher).
	Path string
	// Getenv resolves api_key_env while validating, as the reload does;
	// nil → no variable is set.
	Getenv func(string) string
	// Apply re-reads Path and applies it in place, as SIGHUP does
	// (internal/cli's reload: bindings whose member still exists stay);
	// called after every save. nil → a save is not applied.
	Apply func() error
	// Transport carries the model-list calls of "gather" (the gateway
	// selection, like every model call, SPEC OPS-4); nil →
	// http.DefaultTransport.
	Transport http.RoundTripper
}

// Editor serves the editing API. Safe for concurrent use; saves are
// serialized.
type Editor struct {
	opts Options
	mu   sync.Mutex // one read-check-write at a time
}

// New returns an editor of opts.Path.
func New(opts Options) *Editor {
	if opts.Getenv == nil {
		opts.Getenv = func(string) string { return "" }
	}
	if opts.Transport == nil {
		opts.Transport = http.DefaultTransport
	}
	return &Editor{opts: opts}
}

// Routes answered by ServeHTTP.
const (
	PathConfig   = "/pool/config"
	PathValidate = "/pool/config/validate"
	PathModels   = "/pool/config/models"
)

// ServeHTTP answers (all JSON; see pool/README.md "Editing the
// configuration"):
//
//	GET  /pool/config           {path, version, mode, yaml, doc}; ETag: "version"
//	POST /pool/config/validate  body: YAML or JSON → {ok, errors[], yaml, version}
//	PUT  /pool/config           If-Match: version; body: YAML or JSON →
//	                            200 {version, mode, backup, applied} | 400 {errors} |
//	                            409 {error, version} | 428 without If-Match
//	POST /pool/config/models?members=a,b  body (optional): the edited document →
//	                            {members[], models[]} (gather.go)
//
// The caller (the pool handler) has checked the token and the browser guard.
func (e *Editor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == PathConfig && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		e.serveGet(w)
	case r.URL.Path == PathConfig && r.Method == http.MethodPut:
		e.servePut(w, r)
	case r.URL.Path == PathValidate && r.Method == http.MethodPost:
		e.serveValidate(w, r)
	case r.URL.Path == PathModels && r.Method == http.MethodPost:
		e.serveModels(w, r)
	default:
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "use GET or PUT " + PathConfig + ", POST " + PathValidate + " or POST " + PathModels})
	}
}

// loaded is the file as read now.
type loaded struct {
	data    []byte
	doc     *yaml.Node
	version string
	mode    fs.FileMode
}

func (e *Editor) load() (*loaded, error) {
	data, err := os.ReadFile(e.opts.Path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", e.opts.Path, errors.Unwrap(err))
	}
	fi, err := os.Stat(e.opts.Path)
	if err != nil {
		return nil, err
	}
	doc, err := parseDoc(data)
	if err != nil {
		return nil, fmt.Errorf("%s on disk: %w", e.opts.Path, err)
	}
	return &loaded{data: data, doc: doc, version: Version(data), mode: fi.Mode().Perm()}, nil
}

func (e *Editor) serveGet(w http.ResponseWriter) {
	l, err := e.load()
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	red := redact(l.doc)
	text, _ := encodeDoc(red, fileIndent(l.data))
	var doc any
	_ = red.Decode(&doc)
	w.Header().Set("ETag", `"`+l.version+`"`)
	writeJSON(w, http.StatusOK, map[string]any{"path": e.opts.Path, "version": l.version,
		"mode": fmt.Sprintf("%04o", l.mode), "yaml": string(text), "doc": jsonable(doc)})
}

// readBody reads an edited document (at most MaxDocument bytes).
func readBody(r *http.Request) ([]byte, *FieldError) {
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxDocument+1))
	if err != nil {
		return nil, &FieldError{Message: "reading the body: " + err.Error()}
	}
	if len(body) > MaxDocument {
		return nil, &FieldError{Message: "document above 1 MiB"}
	}
	return body, nil
}

// edited reads the request's document and lays it over the file on disk.
// It returns the merged tree and text, and the errors to answer with (an
// empty document is one: a save sends the whole configuration).
func (e *Editor) edited(r *http.Request, l *loaded) (*yaml.Node, []byte, []FieldError) {
	body, ferr := readBody(r)
	if ferr != nil {
		return nil, nil, []FieldError{*ferr}
	}
	return e.editedBody(body, l)
}

func (e *Editor) editedBody(body []byte, l *loaded) (*yaml.Node, []byte, []FieldError) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, nil, []FieldError{{Message: "empty document: send the whole configuration (GET " + PathConfig + "'s doc or yaml, edited)"}}
	}
	in, err := parseDoc(body)
	if err != nil {
		return nil, nil, []FieldError{fieldError(err)}
	}
	merged, err := merge(l.doc, in)
	if err != nil {
		return nil, nil, []FieldError{fieldError(err)}
	}
	text, err := encodeDoc(merged, fileIndent(l.data))
	if err != nil {
		return nil, nil, []FieldError{{Message: err.Error()}}
	}
	if errs := Validate(text, e.opts.Getenv); len(errs) > 0 {
		return merged, text, errs
	}
	return merged, text, nil
}

func (e *Editor) serveValidate(w http.ResponseWriter, r *http.Request) {
	l, err := e.load()
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	merged, _, errs := e.edited(r, l)
	out := map[string]any{"ok": len(errs) == 0, "errors": nonNil(errs), "version": l.version}
	if merged != nil {
		text, _ := encodeDoc(redact(merged), fileIndent(l.data))
		out["yaml"] = string(text)
	}
	writeJSON(w, http.StatusOK, out)
}

func (e *Editor) servePut(w http.ResponseWriter, r *http.Request) {
	ifMatch := r.Header.Get("If-Match")
	if ifMatch == "" {
		writeJSON(w, http.StatusPreconditionRequired, map[string]string{"error": "If-Match: the version from GET " + PathConfig + " is required"})
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	l, err := e.load()
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	if !sameVersion(ifMatch, l.version) {
		w.Header().Set("ETag", `"`+l.version+`"`)
		writeJSON(w, http.StatusConflict, map[string]string{"error": e.opts.Path + " changed since it was loaded; load it again and redo the edit", "version": l.version})
		return
	}
	merged, text, errs := e.edited(r, l)
	if errs != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"errors": errs})
		return
	}
	s, err := writeFile(e.opts.Path, l.data, text, hasLiteralKey(merged))
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "saving " + e.opts.Path + ": " + err.Error()})
		return
	}
	out := map[string]any{"version": Version(text), "mode": fmt.Sprintf("%04o", s.Mode), "mode_tightened": s.Tightened, "backup": s.Backup, "applied": false}
	if e.opts.Apply != nil {
		if err := e.opts.Apply(); err != nil {
			out["apply_error"] = err.Error()
		} else {
			out["applied"] = true
		}
	}
	w.Header().Set("ETag", `"`+Version(text)+`"`)
	writeJSON(w, http.StatusOK, out)
}

func nonNil(errs []FieldError) []FieldError {
	if errs == nil {
		return []FieldError{}
	}
	return errs
}
