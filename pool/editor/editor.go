// Package editor edits the pool's YAML configuration file for the /pool/
// page and for scripts: it hands out the file with its keys
// replaced by Placeholder and a version, validates an edited document
// naming every error's YAML path, saves it atomically with the
// file's comments and key order kept and the previous file kept as
// PATH.bak, applies it in place like SIGHUP, and gathers the
// models the members offer into proposed unified models.
//
// The package serves /pool/config…; the pool handler routes those paths here
// after its guard (token, browser origin, DNS rebinding). Keys never leave it:
// responses carry Placeholder, a Placeholder sent back means "keep the stored
// key".
package editor

import (
	"bytes"
	"encoding/json"
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
	// (internal/app/cli's reload of the whole file: bindings whose member
	// still exists stay); called after every save, with Lock held. nil →
	// a save is not applied.
	Apply func() error
	// Lock is the lock of Path shared with the file's other readers and
	// writers (the live settings' write-back, SIGHUP, the file watch):
	// a save holds it from reading the file to applying it, a validation
	// while it checks. nil → only the editor's own saves are serialized.
	Lock sync.Locker
	// Check refuses what a reload would refuse beyond the pool's
	// sections (the proxy: section's settings), so a save never writes
	// a file that would not apply: the errors are config.ConfigErrors
	// (their path, line and column). Called with Lock held; nil → none.
	Check func(data []byte) error
	// Transport carries the model-list calls of "gather" (the gateway
	// selection, like every model call); nil →
	// http.DefaultTransport.
	Transport http.RoundTripper
	// ReadOnly is why saving (and gathering models) is refused by the
	// caller, "" when it is not: the GET document carries it as
	// "read_only", so the page says it and disables Save before anything
	// is edited.
	ReadOnly string
}

// Editor serves the editing API. Safe for concurrent use; saves are
// serialized.
type Editor struct {
	opts Options
	mu   sync.Mutex // one read-check-write at a time
}

// lock takes e.mu and Options.Lock for one read-check-write-apply and
// returns what releases them.
func (e *Editor) lock() (unlock func()) {
	e.mu.Lock()
	if e.opts.Lock != nil {
		e.opts.Lock.Lock()
	}
	return func() {
		if e.opts.Lock != nil {
			e.opts.Lock.Unlock()
		}
		e.mu.Unlock()
	}
}

// validate is Validate and Options.Check of data, the text a save would
// write; Options.Lock held.
func (e *Editor) validate(data []byte) []FieldError {
	errs := Validate(data, e.opts.Getenv)
	if e.opts.Check != nil {
		if err := e.opts.Check(data); err != nil {
			errs = append(errs, fieldErrors(err)...)
		}
	}
	return errs
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
	PathRename   = "/pool/config/rename"
)

// ServeHTTP answers (all JSON; see pool/README.md "Editing the
// configuration"):
//
//	GET  /pool/config           {path, version, exists, mode, yaml, doc}; ETag: "version"
//	                            (no file yet: exists false, an empty doc, the version
//	                            of no bytes; a PUT with it creates the file, 0600)
//	POST /pool/config/validate  body: YAML or JSON → {ok, errors[], yaml, version}
//	PUT  /pool/config           If-Match: version; body: YAML or JSON →
//	                            200 {version, mode, backup, applied} | 400 {errors} |
//	                            409 {error, version} | 413 {error, errors} over
//	                            MaxDocument (every body here) | 428 without If-Match
//	POST /pool/config/models?members=a,b  body (optional): the edited document →
//	                            {members[], models[]} (gather.go)
//	POST /pool/config/rename    If-Match: version; body {kind: channel|pool, from, to} →
//	                            as PUT, plus {renamed: {kind, from, to, references}}
//	                            (rename.go)
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
	case r.URL.Path == PathRename && r.Method == http.MethodPost:
		e.serveRename(w, r)
	default:
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "use GET or PUT " + PathConfig + ", POST " + PathValidate + ", POST " + PathModels + " or POST " + PathRename})
	}
}

// loaded is the file as read now.
type loaded struct {
	data    []byte
	doc     *yaml.Node
	version string
	mode    fs.FileMode
	missing bool // no file yet: a save creates it
}

// load reads the file. A file that does not exist yet is an empty
// document (version Version(nil), mode 0600) that a save creates: a
// configuration can be built from nothing on the page.
func (e *Editor) load() (*loaded, error) {
	data, err := os.ReadFile(e.opts.Path)
	if errors.Is(err, fs.ErrNotExist) {
		if _, lerr := os.Lstat(e.opts.Path); lerr == nil {
			return nil, fmt.Errorf("%s is a symlink to a file that does not exist", e.opts.Path)
		}
		doc, _ := parseDoc(nil)
		return &loaded{doc: doc, version: Version(nil), mode: 0o600, missing: true}, nil
	}
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

// text is doc (the file's tree edited) as the file's text: the file with
// only what changed rewritten (spliceDoc), else yaml.v3's rendering of the
// whole document at the file's indentation.
func (l *loaded) text(doc *yaml.Node) ([]byte, error) { return l.textOf(doc, false) }

// textOf is text; renames: doc is the file's tree with keys renamed.
func (l *loaded) textOf(doc *yaml.Node, renames bool) ([]byte, error) {
	if out, ok := spliceDoc(l.data, l.doc, doc, fileIndent(l.data), renames); ok {
		return out, nil
	}
	return encodeDoc(doc, fileIndent(l.data))
}

func (e *Editor) serveGet(w http.ResponseWriter) {
	l, err := e.load()
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	red := redact(l.doc)
	text, _ := l.text(red)
	var doc any
	_ = red.Decode(&doc)
	w.Header().Set("ETag", `"`+l.version+`"`)
	if l.missing {
		text = nil
	}
	out := map[string]any{"path": e.opts.Path, "version": l.version, "exists": !l.missing,
		"mode": fmt.Sprintf("%04o", l.mode), "yaml": string(text), "doc": jsonable(doc)}
	if e.opts.ReadOnly != "" {
		out["read_only"] = e.opts.ReadOnly
	}
	writeJSON(w, http.StatusOK, out)
}

// bodyError is a request body that could not be read: Status is what it
// is answered with (bodyError.answer).
type bodyError struct {
	Status int
	FieldError
}

// readBody reads an edited document of at most MaxDocument bytes. A
// larger one, announced by its Content-Length or found while reading, is
// a bodyError of 413 Content Too Large (RFC 9110 §15.5.14) naming the
// limit, its rest not read (http.MaxBytesReader has the connection closed
// after the answer); a failed read is a 400.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, *bodyError) {
	tooLarge := &bodyError{http.StatusRequestEntityTooLarge, FieldError{Message: fmt.Sprintf("the document is larger than the limit of 1 MiB (%d bytes)", MaxDocument)}}
	if r.ContentLength > MaxDocument {
		return nil, tooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxDocument))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return nil, tooLarge
	case err != nil:
		return nil, &bodyError{http.StatusBadRequest, FieldError{Message: "reading the body: " + err.Error()}}
	}
	return body, nil
}

// answer answers e: {errors: [e]} with its status, and for a 413 its
// message as {error} too, which the page shows for a status it does not
// read errors from.
func (e *bodyError) answer(w http.ResponseWriter) {
	out := map[string]any{"errors": []FieldError{e.FieldError}}
	if e.Status == http.StatusRequestEntityTooLarge {
		out["error"] = e.Message
	}
	writeJSON(w, e.Status, out)
}

// editedBody lays an edited document (a request's body) over the file on
// disk. It returns the merged tree and text, and the errors to answer with
// (an empty document is one: a save sends the whole configuration).
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
	var text []byte
	if verbatim(body, in, merged, l.doc) {
		text = body
	} else if text, err = l.text(merged); err != nil {
		return nil, nil, []FieldError{{Message: err.Error()}}
	}
	if errs := e.validate(text); len(errs) > 0 {
		return merged, text, errs
	}
	return merged, text, nil
}

// verbatim reports whether a YAML body (not JSON: the page sends the
// document as JSON, whose text is no file to keep) is to be saved as sent:
// its data is what the merge made of it, so no key placeholder ("***") or
// redacted URL password had to be restored from the file, and it loses no
// comment of the file's: it carries comments of its own (a text edit, which
// sets the comments) or the file had none. The user's text is then the
// file, quoting, alignment and comments included (fresh-user
// trials: a YAML PUT that only added a comment came back re-rendered, a
// plain URL quoted; one without comments dropped the file's).
func verbatim(body []byte, in, merged, file *yaml.Node) bool {
	return !json.Valid(body) && len(in.Content) == 1 && len(merged.Content) == 1 &&
		sameTree(in.Content[0], merged.Content[0]) && (hasComments(in) || !hasComments(file))
}

func (e *Editor) serveValidate(w http.ResponseWriter, r *http.Request) {
	body, berr := readBody(w, r)
	if berr != nil && berr.Status == http.StatusRequestEntityTooLarge {
		berr.answer(w)
		return
	}
	var ferr *FieldError
	if berr != nil {
		ferr = &berr.FieldError
	}
	unlock := e.lock()
	l, err := e.load()
	if err != nil {
		unlock()
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	var merged *yaml.Node
	var text []byte
	var errs []FieldError
	if ferr != nil {
		errs = []FieldError{*ferr}
	} else {
		merged, text, errs = e.editedBody(body, l)
	}
	unlock()
	out := map[string]any{"ok": len(errs) == 0, "errors": nonNil(errs), "version": l.version}
	if merged != nil {
		// The text a PUT would save, which the errors' positions point
		// into; re-rendered with the keys masked only when it holds one.
		if red := redact(merged); !sameTree(red, merged) {
			text, _ = l.text(red)
		}
		out["yaml"] = string(text)
	}
	writeJSON(w, http.StatusOK, out)
}

func (e *Editor) servePut(w http.ResponseWriter, r *http.Request) {
	// The body is read before the file's lock is taken: a slow client
	// must not hold up the settings or a reload.
	body, berr := readBody(w, r)
	defer e.lock()()
	l := e.loadMatching(w, r)
	if l == nil {
		return
	}
	if berr != nil {
		berr.answer(w)
		return
	}
	merged, text, errs := e.editedBody(body, l)
	if errs != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"errors": errs})
		return
	}
	e.save(w, l, merged, text, nil)
}

// loadMatching loads the file for a write and checks the request's
// If-Match against its version; nil when it answered (428 without
// If-Match, 409 when the file changed, 500 when it cannot be read). The
// caller holds e.lock().
func (e *Editor) loadMatching(w http.ResponseWriter, r *http.Request) *loaded {
	ifMatch := r.Header.Get("If-Match")
	if ifMatch == "" {
		writeJSON(w, http.StatusPreconditionRequired, map[string]string{"error": "If-Match: the version from GET " + PathConfig + " is required"})
		return nil
	}
	l, err := e.load()
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return nil
	}
	if !sameVersion(ifMatch, l.version) {
		w.Header().Set("ETag", `"`+l.version+`"`)
		writeJSON(w, http.StatusConflict, map[string]string{"error": e.opts.Path + " changed since it was loaded; load it again and redo the edit", "version": l.version})
		return nil
	}
	return l
}

// save writes text (the tree merged) over the loaded file, applies it and
// answers {version, mode, mode_tightened, backup, created, applied,
// apply_error} plus extra.
func (e *Editor) save(w http.ResponseWriter, l *loaded, merged *yaml.Node, text []byte, extra map[string]any) {
	var s saved
	var err error
	if l.missing {
		s, err = createFile(e.opts.Path, text)
	} else {
		s, err = writeFile(e.opts.Path, l.data, text, hasLiteralKey(merged))
	}
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "saving " + e.opts.Path + ": " + err.Error()})
		return
	}
	out := map[string]any{"version": Version(text), "mode": fmt.Sprintf("%04o", s.Mode), "mode_tightened": s.Tightened, "backup": s.Backup, "created": l.missing, "applied": false}
	for k, v := range extra {
		out[k] = v
	}
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
