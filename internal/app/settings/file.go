package settings

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/dual-proxy/dual-proxy/pool/config"
	"github.com/dual-proxy/dual-proxy/pool/editor"
)

// The config file's proxy: section holds the live settings under their
// key names, beside the pool's channels: and pools: sections:
//
//	proxy:
//	  gateway: [http://127.0.0.1:7897, socks5://10.0.0.2:1080]
//	  cooldown-ms: 30000
//	  prefer-direct: ["*.internal"]
//
// A flag or its environment variable wins over the file for the keys it
// sets. A change through the API is written back into this section with
// the rest of the file as it was (pool/editor's text edit and atomic
// write).

// SectionKey is the config file's top-level key of the proxy settings.
const SectionKey = "proxy"

// Section is the proxy: section of one file: the values it sets and where
// each key is written (for errors at FILE:LINE:COL).
type Section struct {
	Values Values
	pos    map[string][2]int   // key → line, column
	raw    map[string][]string // key → its scalars as written (withheld from errors)
	file   string
}

// ReadSection reads the proxy: section of data (the file named file, for
// error positions). A file without the section gives an empty Section.
// Errors are config.ConfigErrors, each at FILE:LINE:COL: a YAML syntax
// error, a section that is not a mapping, an unknown or non-live key, a
// value that does not read as its key's kind. Ranges and cross checks are
// Check's (Section.Errors places them).
func ReadSection(data []byte, file string) (*Section, error) {
	s := &Section{Values: Values{}, pos: map[string][2]int{}, raw: map[string][]string{}, file: file}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		e := config.YAMLError(err, data)
		e.File = file
		return nil, e
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return s, nil
	}
	sec := mapValue(doc.Content[0], SectionKey)
	if sec == nil || (sec.Kind == yaml.ScalarNode && sec.Tag == "!!null") {
		return s, nil
	}
	var errs config.ConfigErrors
	total := 0
	bad := func(path string, n *yaml.Node, msg string) {
		// The first MaxNamedErrors are named, the rest counted:
		// a file of many thousand bad keys makes a short answer.
		if total++; total <= MaxNamedErrors {
			errs = append(errs, &config.ConfigError{Path: path, Msg: msg, Line: n.Line, Column: n.Column, File: file})
		}
	}
	if sec.Kind != yaml.MappingNode {
		bad(SectionKey, sec, "want a mapping of settings (gateway: […], cooldown-ms: N, …)")
		return nil, errs
	}
	for i := 0; i+1 < len(sec.Content); i += 2 {
		kn, vn := sec.Content[i], sec.Content[i+1]
		path := SectionKey + "." + clipName(kn.Value)
		k, ok := Lookup(kn.Value)
		switch {
		case !ok:
			if total < MaxNamedErrors {
				bad(path, kn, unknownKey(clipName(kn.Value)))
			} else {
				total++
			}
			continue
		case !k.Live:
			bad(path, kn, "not a live setting: give --"+k.Name+" on the command line")
			continue
		case s.pos[k.Name] != [2]int{}:
			bad(path, kn, "duplicate key")
			continue
		}
		s.pos[k.Name] = [2]int{kn.Line, kn.Column}
		s.raw[k.Name] = scalars(vn)
		if isNull(vn) {
			// null (`key:`, `key: ~`, `key: null`) is the key not set here,
			// its default, as null is in the settings API: one meaning
			// from every source. '' and [] say "none".
			continue
		}
		x, err := nodeValue(k, vn)
		var ie *ItemError
		switch {
		case errors.As(err, &ie):
			bad(fmt.Sprintf("%s[%d]", path, ie.Index), vn.Content[ie.Index], withhold(ie.Message, s.raw[k.Name]))
			continue
		case err != nil:
			bad(path, vn, withhold(err.Error(), s.raw[k.Name]))
			continue
		}
		s.Values[k.Name] = x
	}
	if total > len(errs) {
		errs = append(errs, &config.ConfigError{Path: SectionKey, Msg: fmt.Sprintf("%d errors in all; the first %d are listed", total, len(errs)), Line: sec.Line, Column: sec.Column, File: file})
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return s, nil
}

// isNull reports whether n (an alias followed) is YAML's null.
func isNull(n *yaml.Node) bool {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// nodeValue reads a YAML value as key k's kind.
func nodeValue(k Key, n *yaml.Node) (any, error) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	switch {
	case k.Kind == KindList && n.Kind == yaml.SequenceNode:
		out := []string{}
		for i, it := range n.Content {
			if it.Kind == yaml.AliasNode && it.Alias != nil {
				it = it.Alias
			}
			switch {
			case it.Kind != yaml.ScalarNode:
				return nil, &ItemError{Index: i, Message: "want a string"}
			case it.Tag == "!!null":
				return nil, &ItemError{Index: i, Message: "null is not a value: remove the item ([] for none)"}
			case strings.TrimSpace(it.Value) == "":
				return nil, &ItemError{Index: i, Message: "empty item: remove it ([] for none)"}
			}
			out = append(out, it.Value)
		}
		if k.Name == Gateway {
			// A YAML list item is one gateway: a comma in it is part of a password.
			return trimList(out), nil
		}
		return SplitList(out), nil
	case n.Kind != yaml.ScalarNode:
		return nil, fmt.Errorf("want %s", kindWord(k.Kind))
	}
	return ParseText(k, n.Value)
}

// kindWord names a kind in an error message.
func kindWord(k Kind) string {
	return [...]string{KindMS: "a whole number of milliseconds", KindCount: "a whole number", KindBool: "true or false", KindString: "a string", KindList: "a list of strings"}[k]
}

// Errors places Check's errors of the keys this section sets at their
// lines: "FILE:LINE:COL: proxy.KEY: MESSAGE", the message without the
// values the file gives the key (withhold). Errors about other keys are
// returned as they are (a flag's, say).
func (s *Section) Errors(fes []FieldError) config.ConfigErrors {
	var out config.ConfigErrors
	for _, fe := range fes {
		key := baseKey(fe.Field)
		p := s.pos[key]
		out = append(out, &config.ConfigError{Path: SectionKey + "." + fe.Field, Msg: withhold(fe.Message, s.raw[key]), Line: p[0], Column: p[1], File: s.file})
	}
	return out
}

// withheld stands in an error for a value of the file.
const withheld = "a value not repeated here"

// withhold is msg without the values of vals: an error of the config file
// is logged and shown in the settings document, which needs no token, and
// a value in the wrong place may be a key or a password pasted there (a
// gateway URL with its password, an API key as cooldown-ms).
// The position FILE:LINE:COL says where the value is. A value is removed
// quoted ("…", as %q writes it) always, and as it is when it is long
// enough to be a secret (6 bytes or more: a shorter one also matches
// words of the message).
func withhold(msg string, vals []string) string {
	for _, v := range vals {
		if v == "" {
			continue
		}
		msg = strings.ReplaceAll(msg, strconv.Quote(v), withheld)
		if len(v) >= 6 {
			msg = strings.ReplaceAll(msg, v, withheld)
		}
	}
	return msg
}

// scalars are the scalar texts of n: n's own, or a list's items.
func scalars(n *yaml.Node) []string {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode {
		return []string{n.Value, strings.TrimSpace(n.Value)}
	}
	var out []string
	for _, it := range n.Content {
		if it.Kind == yaml.ScalarNode {
			out = append(out, it.Value, strings.TrimSpace(it.Value))
		}
	}
	return out
}

// mapValue is the value of key in mapping m, nil when absent.
func mapValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; m != nil && m.Kind == yaml.MappingNode && i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// WriteSection returns data with proxy.KEY set to each value of changes
// (a nil value removes the key) and everything else as it was: comments,
// key order, quoting, the other sections (editor.EditText). A missing
// proxy: section is appended.
func WriteSection(data []byte, changes map[string]any) ([]byte, error) {
	disk, err := editor.ParseDoc(data)
	if err != nil {
		return nil, err
	}
	merged := editor.CopyDoc(disk)
	root := merged.Content[0]
	sec := mapValue(root, SectionKey)
	if sec == nil || sec.Kind != yaml.MappingNode {
		sec = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		setKey(root, SectionKey, sec)
	}
	for _, k := range Keys {
		x, ok := changes[k.Name]
		if !ok {
			continue
		}
		if x == nil {
			deleteKey(sec, k.Name)
			continue
		}
		setKey(sec, k.Name, valueNode(x, mapValue(sec, k.Name)))
	}
	return editor.EditText(data, disk, merged)
}

// valueNode is the YAML node of x, in the style (flow or block list,
// quoting) and with the comments of the node it replaces, old (nil: none).
func valueNode(x any, old *yaml.Node) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode}
	switch v := x.(type) {
	case int:
		n.Tag, n.Value = "!!int", strconv.Itoa(v)
	case bool:
		n.Tag, n.Value = "!!bool", strconv.FormatBool(v)
	case string:
		n.Tag, n.Value = "!!str", v
	case []string:
		n.Kind, n.Tag = yaml.SequenceNode, "!!seq"
		for _, it := range v {
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: it})
		}
	}
	if old != nil {
		n.HeadComment, n.LineComment, n.FootComment = old.HeadComment, old.LineComment, old.FootComment
		if old.Kind == n.Kind && (n.Kind == yaml.SequenceNode || n.Tag == "!!str" && old.Tag == "!!str") {
			n.Style = old.Style &^ (yaml.LiteralStyle | yaml.FoldedStyle)
		}
	} else if n.Kind == yaml.SequenceNode {
		n.Style = yaml.FlowStyle // gateway: [a, b], as the section's example
	}
	return n
}

// setKey sets key's value in mapping m, appending the key when absent.
func setKey(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
}

// deleteKey removes key from mapping m.
func deleteKey(m *yaml.Node, key string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = slices.Delete(m.Content, i, i+2)
			return
		}
	}
}
