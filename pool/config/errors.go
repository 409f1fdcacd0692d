package config

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// A bad file reports every error found, not just the first (a user should
// not fix one typo, run again, and meet the next). The decoder goes on past
// an error in one key, item or cross reference, collects them in an
// errList, and ParseConfig returns them as ConfigErrors in file order, each
// with the line and column yaml.Node gives for its path.

// ConfigError is a configuration error at a YAML path such as
// "pools.ustc-pool.members[2]". Its message never contains a key.
type ConfigError struct {
	Path string // YAML path, "" for a file-level error
	Msg  string
	// Line and Column are the 1-based position of the key (or list item)
	// Path names, 0 when unknown (a file-level error; Column alone is 0
	// when the YAML parser gave only a line).
	Line, Column int
	// File is the file the configuration came from, "" when it was parsed
	// from bytes (LoadConfig sets it).
	File string

	// repeat: the error is about a key's second occurrence, not about the
	// value at Path, so it does not hide the checks of that value.
	repeat bool
}

// cfgErr is the error msg at YAML path p; ParseConfig fills the position.
func cfgErr(p, msg string) *ConfigError { return &ConfigError{Path: p, Msg: msg} }

// Error is "FILE:LINE:COLUMN: PATH: MSG" (the shape compilers use, which
// terminals and editors jump to); without a file "PATH: MSG (line L,
// column C)". The position is left out when unknown and the path when
// empty.
func (e *ConfigError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			b.WriteString(":" + strconv.Itoa(e.Line))
		}
		if e.Line > 0 && e.Column > 0 {
			b.WriteString(":" + strconv.Itoa(e.Column))
		}
		b.WriteString(": ")
	}
	if e.Path != "" {
		b.WriteString(printablePath(e.Path) + ": ")
	}
	b.WriteString(e.Msg)
	switch {
	case e.File != "":
	case e.Line > 0 && e.Column > 0:
		fmt.Fprintf(&b, " (line %d, column %d)", e.Line, e.Column)
	case e.Line > 0:
		fmt.Fprintf(&b, " (line %d)", e.Line)
	}
	return b.String()
}

// ConfigErrors are every error of one configuration, in file order
// (ParseConfig's error when there is more than one problem). errors.As
// finds the first *ConfigError through Unwrap.
type ConfigErrors []*ConfigError

// Error is the errors' messages joined by "; " (one line, for logs); the
// CLI prints Lines.
func (es ConfigErrors) Error() string { return strings.Join(es.Lines(), "; ") }

// Lines are the errors' messages, one each.
func (es ConfigErrors) Lines() []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Error()
	}
	return out
}

// Unwrap returns each error (for errors.As and errors.Is).
func (es ConfigErrors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// AllErrors are the *ConfigErrors in err (a ConfigErrors, one *ConfigError,
// or either wrapped), nil when there is none.
func AllErrors(err error) []*ConfigError {
	var es ConfigErrors
	if errors.As(err, &es) {
		return es
	}
	var e *ConfigError
	if errors.As(err, &e) {
		return []*ConfigError{e}
	}
	return nil
}

// errList collects the decoder's errors.
type errList []*ConfigError

// add appends err's *ConfigErrors (flattening a ConfigErrors); nil is
// nothing, another error is a file-level one.
func (l *errList) add(err error) {
	switch e := err.(type) {
	case nil:
	case *ConfigError:
		*l = append(*l, e)
	case ConfigErrors:
		*l = append(*l, e...)
	default:
		*l = append(*l, cfgErr("", err.Error()))
	}
}

// covers reports whether an error is at p or inside it (p's keys and
// items), or at a parent of p: a check at p would repeat that error.
func (l errList) covers(p string) bool {
	for _, e := range l {
		if !e.repeat && (under(p, e.Path) || under(e.Path, p)) {
			return true
		}
	}
	return false
}

// under reports whether path p is q or below it.
func under(p, q string) bool {
	return p == q || q == "" || strings.HasPrefix(p, q+".") || strings.HasPrefix(p, q+"[")
}

// err is nil, the one error, or ConfigErrors.
func (l errList) err() error {
	switch len(l) {
	case 0:
		return nil
	case 1:
		return l[0]
	}
	return ConfigErrors(l)
}

// located returns the errors with their position filled in from the
// document (an error that already has one keeps it), in file order; errors
// without a position (file-level) come first. An error at a path the file
// lacks (a required key missing: "channels.a.base_url: missing") gets the
// position of the nearest ancestor it has, the entry to add the key to (without
// one the user had to search for it).
func (l errList) located(root *yaml.Node) errList {
	for _, e := range l {
		for p := e.Path; e.Line == 0 && p != ""; p = parentPath(p) {
			if n := locate(root, p); n != nil {
				e.Line, e.Column = n.Line, n.Column
			}
		}
	}
	slices.SortStableFunc(l, func(a, b *ConfigError) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	return l
}

// parentPath is p without its last key or item ("a.b[2].c" → "a.b[2]" →
// "a.b"), "" at the top.
func parentPath(p string) string {
	i := strings.LastIndexAny(p, ".[")
	if i < 0 {
		return ""
	}
	return p[:i]
}

// locate is the node path p names under root: the key node of a mapping
// entry, the item of a list ("a.b[2].c"). Keys may contain dots, so each
// step takes the first key the rest of the path starts with. nil when the
// path is not in the document (a default, or a stand-in).
func locate(root *yaml.Node, p string) *yaml.Node {
	n, at := deref(root), root
	for p != "" {
		switch {
		case n.Kind == yaml.MappingNode:
			next := -1
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i].Value
				if rest, ok := strings.CutPrefix(p, k); ok && (rest == "" || rest[0] == '.' || rest[0] == '[') {
					next, p = i, strings.TrimPrefix(rest, ".")
					break
				}
			}
			if next < 0 {
				return nil
			}
			at, n = n.Content[next], deref(n.Content[next+1])
		case n.Kind == yaml.SequenceNode && p[0] == '[':
			end := strings.IndexByte(p, ']')
			i, err := strconv.Atoi(p[1:max(end, 1)])
			if end < 0 || err != nil || i < 0 || i >= len(n.Content) {
				return nil
			}
			at, n = n.Content[i], deref(n.Content[i])
			p = strings.TrimPrefix(p[end+1:], ".")
		default:
			return nil
		}
	}
	return at
}

// YAMLError is the parser's error on data as a *ConfigError at the line
// to edit (yamlpos.go): yaml.v3 says "yaml: line N: MSG", where N is right
// for a scanner error but, for a parser error, the line before the start of
// the enclosing mapping or list; such a line is found again, and MSG gets a
// hint in words for the usual causes. The column is left unknown.
func YAMLError(err error, data []byte) *ConfigError {
	line, msg := yamlLine(err)
	e := cfgErr("", msg)
	e.Line = line
	hint, parser := parserProblems[msg]
	if parser || line == 0 {
		if l := problemLine(data, msg); l > 0 {
			e.Line = l
		} else if parser && line > 0 {
			e.Line = line + 1 // at least the enclosing collection's start
		}
	}
	if !parser && indentedWithTab(data, e.Line) {
		hint = tabHint
	}
	if hint != "" {
		e.Msg += " (" + hint + ")"
	}
	return e
}
