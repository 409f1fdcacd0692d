package settings

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/editor"
	"github.com/dual-proxy/dual-proxy/proxy/route"
)

// Source tells where a setting's value came from.
type Source string

// The sources of a value.
const (
	SourceDefault Source = "default"
	SourceFlag    Source = "flag"
	SourceEnv     Source = "env"
	SourceFile    Source = "file"
	SourceAPI     Source = "api"
)

// Options are a Live's start values and collaborators.
type Options struct {
	// Values are the complete start values (flags, environment, file,
	// defaults), Sources where each came from (missing: SourceDefault),
	// Defaults what a key reset with null (or removed from the file)
	// returns to.
	Values   Values
	Sources  map[string]Source
	Defaults Values
	// StartFlags name the flag that set a key at start where it is not
	// "--KEY" (verify-tls by "--no-verify-tls"), for the document's
	// start_flags; nil: every flag is "--KEY".
	StartFlags map[string]string
	Env        Env
	// Apply makes r the running configuration (the engine, the log level);
	// it is called with changes serialized, once at New and after every
	// accepted change. An error refuses the change.
	Apply func(r *Resolved) error
	// File is the config file (--config) whose proxy: section changes are
	// written back into and Reload reads; "" for none.
	File string
	// WriteBack: a change is written into File's proxy: section (the file
	// was named with --config); otherwise File is only read.
	WriteBack bool
	// Logger gets one line per change (who, which keys); nil: none.
	Logger *slog.Logger
	// Probe sends one request through gateway alone (a parsed candidate,
	// not necessarily in the list) and says where to and how long it
	// took: the page's test button. nil: the test answers an error.
	Probe func(ctx context.Context, gateway string) (target string, latency time.Duration, err error)
	// OnChange is told of every applied change (the metrics counter):
	// by is "api", "cli", "page" or "file"; nil: nothing.
	OnChange func(by string, keys []string)
	// Lock is the lock of File, shared with its other readers and
	// writers (a reload of the whole file, the pool's editor): every
	// change with its write-back, and every reload, holds it from reading
	// the file to applying it, so a reload never applies the file as it
	// was before a change it waited for (what a change
	// answered is what runs and what is on disk). nil: a lock of the
	// Live's own.
	Lock sync.Locker
	// Written is told, with Lock held, the file as the write-back read it
	// (nil: there was none) and the text it wrote in its place: the file
	// watch knows the text as its own write, unless the file it replaced
	// held another writer's change this instance has not reloaded (then
	// the watch reloads it, and that change runs here too). nil: nothing.
	Written func(before, after []byte)
}

// Live holds a running instance's settings (SPEC OPS-7). Safe for
// concurrent use; changes are serialized.
type Live struct {
	opts     Options
	mu       sync.Locker // Options.Lock
	cur      *Resolved
	src      map[string]Source
	startSrc map[string]Source // src at New, never changed
	gen      uint64
	nonce    string
	fileErrs []string
}

// Errors of Change.
var (
	// ErrStale: If-Match names a version that is not the current one.
	ErrStale = errors.New("the settings changed since that version was read; read them again and redo the change")
	// ErrFileRefused: the config file a change would be written into holds
	// what the last reload refused; written there, the change would put on
	// disk settings that do not run (what a change answered is
	// what runs and what is on disk).
	ErrFileRefused = errors.New("the config file holds errors its last reload refused (dual-proxy settings get lists them): fix the file first; its next reload applies it")
	// ErrNoVersion: a change without If-Match.
	ErrNoVersion = errors.New("If-Match: the version from GET " + Path + " is required")
)

// Invalid is a change's field errors; nothing of it was applied.
type Invalid []FieldError

// Error lists the errors on one line.
func (e Invalid) Error() string {
	parts := make([]string, len(e))
	for i, fe := range e {
		parts[i] = fe.Error()
	}
	return strings.Join(parts, "; ")
}

// New checks opts.Values, applies them and returns the Live.
func New(opts Options) (*Live, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	r, fes := Check(opts.Values, opts.Env)
	if fes != nil {
		return nil, Invalid(fes)
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	l := &Live{opts: opts, mu: opts.Lock, cur: r, src: map[string]Source{}, nonce: hex.EncodeToString(b[:])}
	if l.mu == nil {
		l.mu = &sync.Mutex{}
	}
	for _, k := range Keys {
		l.src[k.Name] = SourceDefault
		if s, ok := opts.Sources[k.Name]; ok {
			l.src[k.Name] = s
		}
	}
	l.startSrc = maps.Clone(l.src)
	if opts.Apply != nil {
		if err := opts.Apply(r); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// Current is the running configuration (read-only).
func (l *Live) Current() *Resolved {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cur
}

// version is the current version; l.mu held.
func (l *Live) version() string { return l.nonce + "-" + strconv.FormatUint(l.gen, 10) }

// Change applies the settings in body (key → JSON value; null resets a key
// to its default) when ifMatch is the current version, by a client of kind
// by ("api", "cli", "page"). Every key is checked first: an unknown or
// non-live key or a bad value is an Invalid naming each field, and nothing
// is applied. Masked parts of a value mean the current value's (mask.go).
// A change of nothing is no new version. Errors: ErrNoVersion, ErrStale,
// ErrFileRefused, Invalid, Apply's.
func (l *Live) Change(ifMatch string, body map[string]json.RawMessage, by string) (Document, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if strings.TrimSpace(ifMatch) == "" {
		return Document{}, ErrNoVersion
	}
	if v := strings.Trim(strings.TrimPrefix(strings.TrimSpace(ifMatch), "W/"), `"`); v != l.version() && v != "*" {
		return l.document(), ErrStale
	}
	if l.fileErrs != nil && l.opts.File != "" && l.opts.WriteBack {
		return l.document(), ErrFileRefused
	}
	next := l.cur.Values.Clone()
	var fes []FieldError
	unknown := 0
	for _, k := range sortedKeys(body) {
		key, ok := Lookup(k)
		switch {
		case !ok:
			// Only the first MaxNamedErrors unknown names get a message
			// (each lists the settings): a body of many thousand keys
			// must not make an answer many times its size.
			if unknown++; unknown <= MaxNamedErrors {
				fes = append(fes, FieldError{Field: clipName(k), Message: unknownKey(clipName(k))})
			}
			continue
		case !key.Live:
			fes = append(fes, FieldError{Field: k, Message: "not a live setting: the listener and the log format are fixed at start; restart the instance to change it"})
			continue
		}
		if string(body[k]) == "null" {
			next[k] = l.opts.Defaults[k]
			continue
		}
		x, err := ParseJSON(key, body[k])
		var ie *ItemError
		switch {
		case errors.As(err, &ie):
			fes = append(fes, FieldError{Field: fmt.Sprintf("%s[%d]", k, ie.Index), Message: ie.Message})
			continue
		case err != nil:
			fes = append(fes, FieldError{Field: k, Message: err.Error()})
			continue
		}
		if l, ok := x.([]string); ok && k == Gateway && len(l) > MaxGateways {
			fes = append(fes, FieldError{Field: k, Message: fmt.Sprintf("at most %d gateways, got %d", MaxGateways, len(l))})
			continue
		}
		next[k] = unmask(k, x, l.cur.Values[k])
	}
	if fes != nil {
		env := l.opts.Env
		env.StrictGateways = true
		_, more := Check(next, env)
		return Document{}, Invalid(bounded(sortErrors(append(fes, more...)), unknown))
	}
	changed := map[string]any{}
	for k := range body {
		switch {
		case string(body[k]) == "null":
			if l.src[k] != SourceDefault || !equal(next[k], l.cur.Values[k]) {
				changed[k] = nil
			}
		case !equal(next[k], l.cur.Values[k]) || l.src[k] != SourceAPI:
			changed[k] = next[k]
		}
	}
	doc, err := l.commit(next, changed, SourceAPI, by)
	if err != nil || len(changed) == 0 || l.opts.File == "" || !l.opts.WriteBack {
		return doc, err
	}
	doc.Saved = l.writeBack(changed)
	return doc, nil
}

// commit checks next and makes it current, the keys of changed taking
// source src (SourceDefault for a nil value); l.mu held.
func (l *Live) commit(next Values, changed map[string]any, src Source, by string) (Document, error) {
	env := l.opts.Env
	env.StrictGateways = true
	r, fes := Check(next, env)
	if fes != nil {
		return Document{}, Invalid(fes)
	}
	if len(changed) == 0 {
		return l.document(), nil
	}
	// A key whose value stays and only its source moves (a reload reading
	// back what a change wrote) is no new version: a client holding the
	// version of that change must not be refused its next change for it.
	// Nor is it named as changed: the log line and the metrics name only
	// the keys whose running value moved.
	keys := moved(next, l.cur.Values, changed)
	if len(keys) == 0 {
		for k, v := range changed {
			l.src[k] = src
			if v == nil {
				l.src[k] = SourceDefault
			}
		}
		return l.document(), nil
	}
	if l.opts.Apply != nil {
		if err := l.opts.Apply(r); err != nil {
			return Document{}, err
		}
	}
	l.cur = r
	for k := range changed {
		l.src[k] = src
		if changed[k] == nil {
			l.src[k] = SourceDefault
		}
	}
	l.gen++
	l.opts.Logger.Info("settings changed", "by", by, "keys", strings.Join(keys, ","), "version", l.version())
	if l.opts.OnChange != nil {
		l.opts.OnChange(by, keys)
	}
	return l.document(), nil
}

// writeBack writes changed into the file's proxy: section; l.mu held.
func (l *Live) writeBack(changed map[string]any) *Saved {
	s := &Saved{Path: l.opts.File}
	data, err := os.ReadFile(l.opts.File)
	if errors.Is(err, os.ErrNotExist) {
		data, err = nil, nil
	}
	var text []byte
	if err == nil {
		text, err = WriteSection(data, changed)
	}
	if err == nil && data == nil {
		err = os.WriteFile(l.opts.File, text, 0o600)
		s.Mode = "0600"
	} else if err == nil {
		mode, backup, werr := editor.WriteFile(l.opts.File, data, text, secret(l.cur.Values))
		s.Mode, s.Backup, err = fmt.Sprintf("%04o", mode), backup, werr
	}
	if err != nil {
		s.Error = err.Error()
		l.opts.Logger.Warn("settings applied but not written back to the config file", "reason", err.Error())
	} else if l.opts.Written != nil {
		l.opts.Written(data, text)
	}
	return s
}

// Probe tests gateway (a masked one of the list means that gateway)
// through Options.Probe. A gateway that does not parse is an Invalid.
func (l *Live) Probe(ctx context.Context, gateway string) (string, time.Duration, error) {
	l.mu.Lock()
	g := unmask(Gateway, []string{strings.TrimSpace(gateway)}, l.cur.Values.List(Gateway)).([]string)[0]
	l.mu.Unlock()
	if msg := portless(g); msg != "" {
		return "", 0, Invalid{{Field: Gateway, Message: msg}}
	}
	if _, err := route.ParseGateway(g, Gateway); err != nil {
		return "", 0, Invalid{{Field: Gateway, Message: route.RedactURL(g) + ": " + err.Error()}}
	}
	if l.opts.Probe == nil {
		return "", 0, errors.New("this instance cannot test a gateway")
	}
	return l.opts.Probe(ctx, g)
}

// Reload re-reads the file (a file of proxy: settings only; an instance
// whose file has pools too reloads it whole with PrepareFile and
// FileChange.Commit): its keys apply except those a flag or its
// environment variable set; a key removed from the file returns to its
// default. A missing, unreadable or bad file keeps the settings as they
// are; its errors, each at FILE:LINE:COL, stay in the document until a
// reload succeeds. The file is read with Options.Lock held, so a change
// answered before the reload is in what it reads. Without a file Reload
// does nothing.
func (l *Live) Reload() error {
	if l.opts.File == "" {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	data, err := os.ReadFile(l.opts.File)
	var fc *FileChange
	if err == nil {
		fc, err = l.PrepareFile(data)
	}
	if err == nil {
		err = fc.Commit()
	}
	if err != nil {
		l.FileFailed(errorLines(err))
	}
	return err
}

// FileChange is a reload of the config file's proxy: section, read and
// checked against the running settings and not yet applied (PrepareFile).
type FileChange struct {
	l       *Live
	next    Values
	changed map[string]any // the keys that take the file (or, nil, the default) as their source
	keys    []string       // those of changed whose running value moves
}

// PrepareFile reads the proxy: section of data, the whole config file as
// read now, lays it over the running settings (Overlay: flags and their
// variables keep their keys, a key the file no longer sets returns to its
// default) and checks the result, changing nothing. Errors are
// config.ConfigErrors at FILE:LINE:COL that never repeat a value of the
// section (it may be a key pasted in the wrong place). The caller holds
// Options.Lock from reading the file until Commit, so a reload never applies an older file over a change.
func (l *Live) PrepareFile(data []byte) (*FileChange, error) {
	sec, err := ReadSection(data, l.opts.File)
	if err != nil {
		return nil, err
	}
	next, changed := Overlay(l.cur.Values, l.src, sec, l.opts.Defaults)
	env := l.opts.Env
	env.StrictGateways = true
	if _, fes := Check(next, env); fes != nil {
		return nil, sec.Errors(fes)
	}
	return &FileChange{l: l, next: next, changed: changed, keys: moved(next, l.cur.Values, changed)}, nil
}

// Keys are the settings whose running value the reload changes, in the
// key table's order: a key the file sets to the value it runs with (one a
// change through the API wrote back, or the same value retyped) is not
// among them, though its source becomes the file.
func (c *FileChange) Keys() []string { return c.keys }

// Commit applies the reload (Options.Apply; a new version when a key
// changed, logged as by "file") and clears the file's errors. An error of
// Apply changes nothing. The caller holds Options.Lock since PrepareFile.
func (c *FileChange) Commit() error {
	if _, err := c.l.commit(c.next, c.changed, SourceFile, "file"); err != nil {
		return err
	}
	c.l.fileErrs = nil
	return nil
}

// moved are the keys of changed whose value in next differs from the
// one in cur, sorted as the key table: what a change makes run
// differently, a key whose source alone moves left out.
func moved(next, cur Values, changed map[string]any) []string {
	var keys []string
	for _, k := range sortedKeys(changed) {
		if !equal(next[k], cur[k]) {
			keys = append(keys, k)
		}
	}
	return keys
}

// FileFailed records lines, the errors of a reload of the file that
// applied nothing (of its proxy: section or of another section: a reload
// is all or nothing), for the document until a reload
// succeeds, and logs that the settings stay. The caller holds
// Options.Lock.
func (l *Live) FileFailed(lines []string) {
	l.fileErrs = slices.Clone(lines)
	l.opts.Logger.Warn("config file not reloaded: the settings stay as they were", "config", l.opts.File, "errors", len(lines))
}

// Overlay lays a file's section over values whose sources are src: the
// section's keys replace those not set by a flag or its environment
// variable; a key the file set before and no longer has returns to
// defaults. changed are the keys that take the file (or, nil, the
// default) as their source.
func Overlay(values Values, src map[string]Source, sec *Section, defaults Values) (Values, map[string]any) {
	next := values.Clone()
	changed := map[string]any{}
	for _, k := range Keys {
		s := src[k.Name]
		if !k.Live || s == SourceFlag || s == SourceEnv {
			continue
		}
		if x, ok := sec.Values[k.Name]; ok {
			if !equal(x, values[k.Name]) || s != SourceFile {
				next[k.Name], changed[k.Name] = x, x
			}
		} else if s == SourceFile {
			next[k.Name], changed[k.Name] = defaults[k.Name], nil
		}
	}
	return next, changed
}

// errorLines are err's messages one per line (config.ConfigErrors give
// one each).
func errorLines(err error) []string {
	var ls interface{ Lines() []string }
	if errors.As(err, &ls) {
		return ls.Lines()
	}
	return []string{err.Error()}
}
