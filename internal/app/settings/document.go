package settings

import (
	"maps"
	"slices"
	"strings"
)

// Document is the GET /_dual-proxy/settings answer (and a PUT's).
type Document struct {
	// Version changes with every applied change; PUT sends it back in
	// If-Match (also the ETag).
	Version string `json:"version"`
	// Settings are the live settings by key name, passwords masked.
	Settings map[string]any `json:"settings"`
	// Sources tell where each setting's value came from (default, flag,
	// env, file, api); the fixed ones' too.
	Sources map[string]Source `json:"sources"`
	// StartSources tell where each setting's value came from when the
	// instance started (default, flag, env, file). A key whose start
	// source is a flag or its environment variable gets that value back
	// at a restart, whatever changed it since (docs/flags.md); Sources
	// say api once a change set it.
	StartSources map[string]Source `json:"start_sources"`
	// StartFlags name the flag that set a key at start where it is not
	// "--KEY" ("verify-tls": "--no-verify-tls"), so a note of what a
	// restart brings back names the flag given.
	StartFlags map[string]string `json:"start_flags,omitempty"`
	// Fixed are the settings bound at start (the listener, the log
	// format): shown, changed only by a restart.
	Fixed map[string]any `json:"fixed"`
	// Keys describe the live settings in the page's order.
	Keys []KeyInfo `json:"keys"`
	// Groups are the form's headings in the page's order (Groups); each
	// key names its own.
	Groups []Group `json:"groups"`
	// Config is the config file whose proxy: section a change is written
	// back to ("" for none).
	Config string `json:"config,omitempty"`
	// WriteBack tells whether a change is written into Config.
	WriteBack bool `json:"write_back"`
	// FileErrors are the last failed reload's errors, FILE:LINE:COL each,
	// until a reload succeeds.
	FileErrors []string `json:"file_errors,omitempty"`
	// Warnings are the candidates' (a skipped environment proxy, ignored
	// NO_PROXY entries).
	Warnings []string `json:"warnings,omitempty"`
	// Saved tells, after a change, how it was written back to Config.
	Saved *Saved `json:"saved,omitempty"`
}

// KeyInfo describes one live setting for a form.
type KeyInfo struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"` // ms, count, bool, string or list
	Group string `json:"group"`
	// Hint is the form's words for the key (Key.Hint); absent: the
	// form says what Zero means.
	Hint string `json:"hint,omitempty"`
	Min  *int   `json:"min,omitempty"`
	Max  *int   `json:"max,omitempty"`
	// Zero is what 0 or '' (ZeroValue) means for the key; absent when
	// that value is refused (docs/flags.md, Key.Zero).
	Zero      string `json:"zero,omitempty"`
	ZeroValue string `json:"zero_value,omitempty"`
	// Optional: the value may be null, "not given" (Key.Optional).
	Optional bool `json:"optional,omitempty"`
}

// Saved is the write-back of a change into the config file.
type Saved struct {
	Path   string `json:"path"`
	Mode   string `json:"mode,omitempty"`   // octal, "0600"
	Backup string `json:"backup,omitempty"` // the previous content's file
	Error  string `json:"error,omitempty"`  // the change applied, the file not written
}

// kindNames are KeyInfo.Kind's words.
var kindNames = [...]string{KindMS: "ms", KindCount: "count", KindBool: "bool", KindString: "string", KindList: "list"}

// keyInfos are the live keys, grouped in Groups order.
var keyInfos = func() []KeyInfo {
	var out []KeyInfo
	for _, g := range Groups {
		for _, k := range Keys {
			if !k.Live || k.Group != g.Name {
				continue
			}
			ki := KeyInfo{Name: k.Name, Kind: kindNames[k.Kind], Group: k.Group, Hint: k.Hint, Zero: k.Zero, Optional: k.Optional}
			if k.Zero != "" {
				ki.ZeroValue = k.ZeroValue()
			}
			if k.Kind == KindMS || k.Kind == KindCount {
				lo, hi := k.Min, k.Max
				ki.Min, ki.Max = &lo, &hi
			}
			out = append(out, ki)
		}
	}
	return out
}()

// Document is the current document.
func (l *Live) Document() Document {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.document()
}

// document is Document; l.mu held.
func (l *Live) document() Document {
	d := Document{
		Version:      l.version(),
		Settings:     map[string]any{},
		Fixed:        map[string]any{},
		Sources:      maps.Clone(l.src),
		StartSources: maps.Clone(l.startSrc),
		StartFlags:   maps.Clone(l.opts.StartFlags),
		Keys:         keyInfos,
		Groups:       Groups,
		Config:       l.opts.File,
		WriteBack:    l.opts.File != "" && l.opts.WriteBack,
		FileErrors:   slices.Clone(l.fileErrs),
		Warnings:     slices.Clone(l.cur.Warnings),
	}
	for _, k := range Keys {
		x := l.cur.Values[k.Name]
		if k.Live {
			d.Settings[k.Name] = mask(k.Name, x)
		} else {
			d.Fixed[k.Name] = x
		}
	}
	if l.opts.Env.BoundPort != 0 {
		d.Fixed[ListenPort] = l.opts.Env.BoundPort
	}
	return d
}

// sortErrors orders field errors by their keys' place in Keys (unknown
// keys last), a key's own errors in the order found.
func sortErrors(fes []FieldError) []FieldError {
	slices.SortStableFunc(fes, func(a, b FieldError) int { return rank(baseKey(a.Field)) - rank(baseKey(b.Field)) })
	return fes
}

// baseKey is a field without its list index ("gateway[1]" → "gateway").
func baseKey(field string) string {
	if i := strings.IndexByte(field, '['); i >= 0 {
		return field[:i]
	}
	return field
}

// rank is the place of name in Keys, len(Keys) for an unknown name.
func rank(name string) int {
	if i, ok := keyRank[name]; ok {
		return i
	}
	return len(Keys)
}

// keyRank is each key's place in Keys.
var keyRank = func() map[string]int {
	m := make(map[string]int, len(Keys))
	for i, k := range Keys {
		m[k.Name] = i
	}
	return m
}()

// sortedKeys are m's keys in Keys order, unknown ones last (sorted).
func sortedKeys[V any](m map[string]V) []string {
	out := slices.Collect(maps.Keys(m))
	slices.SortFunc(out, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	return out
}
