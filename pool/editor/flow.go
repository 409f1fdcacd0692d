package editor

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// Scalars and { … } / [ … ] edited in place (splice.go): a changed
// scalar's token is replaced by the new value written as the file would
// (plain where it reads back the same, else yaml.v3's quoting, which keeps
// the old token's quote style); a collection that gained or lost entries is
// rewritten on one line from its tokens as written.

// scalar replaces the token of the one-line scalar d by m; inFlow: inside
// a { … } or [ … ].
func (s *splicer) scalar(d, m *yaml.Node, inFlow bool) bool {
	if d.Value == "" || (d.Style|m.Style)&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return false
	}
	from, to, ok := s.token(d, inFlow)
	if !ok {
		return false
	}
	text, ok := scalarText(m, inFlow)
	if !ok {
		return false
	}
	s.edits = append(s.edits, edit{from: from, to: to, text: text})
	return true
}

// token is the byte range of scalar d as written, when it is on one line
// and reads back as d.
func (s *splicer) token(d *yaml.Node, inFlow bool) (int, int, bool) {
	from, ok := s.offset(d.Line, d.Column)
	if !ok {
		return 0, 0, false
	}
	line := s.data[from:s.starts[d.Line]]
	n := 0
	switch d.Style {
	case yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
		n = quotedEnd(line)
	case 0:
		for n < len(line) && !plainEnds(line, n, inFlow) {
			n++
		}
		n = len(strings.TrimRight(string(line[:n]), " \t"))
	}
	if n == 0 || !readsBack(string(line[:n]), d, inFlow) {
		return 0, 0, false
	}
	return from, from + n, true
}

// plainEnds reports whether a plain scalar ends at line[i]: a line break,
// " #", ": " (a key's end), and inside { … } / [ … ] a flow indicator.
func plainEnds(line []byte, i int, inFlow bool) bool {
	c := line[i]
	switch {
	case c == '\n' || c == '\r':
		return true
	case c == '#':
		return i > 0 && (line[i-1] == ' ' || line[i-1] == '\t')
	case c == ':':
		return i+1 == len(line) || strings.IndexByte(" \t\r\n", line[i+1]) >= 0 || (inFlow && strings.IndexByte(",[]{}", line[i+1]) >= 0)
	}
	return inFlow && strings.IndexByte(",[]{}", c) >= 0
}

// quotedEnd is the length of the quoted scalar line starts with, 0 when it
// does not close on this line.
func quotedEnd(line []byte) int {
	if len(line) == 0 {
		return 0
	}
	q := line[0]
	for i := 1; i < len(line) && line[i] != '\n'; i++ {
		switch {
		case q == '"' && line[i] == '\\':
			i++
		case line[i] == q && q == '\'' && i+1 < len(line) && line[i+1] == '\'':
			i++
		case line[i] == q:
			return i + 1
		}
	}
	return 0
}

// scalarText is m written as a token: plain when its style is plain and it
// reads back the same, else yaml.v3's rendering (which quotes where it
// must, in m's quote style).
func scalarText(m *yaml.Node, inFlow bool) (string, bool) {
	if m.Style == 0 && m.Value != "" && !strings.ContainsAny(m.Value, "\n\r") && readsBack(m.Value, m, inFlow) {
		return m.Value, true
	}
	n := *m
	n.HeadComment, n.LineComment, n.FootComment = "", "", ""
	seq := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle, Tag: "!!seq", Content: []*yaml.Node{&n}}
	text, err := encodeDoc(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{seq}}, 2)
	t := strings.TrimSpace(string(text))
	if err != nil || !strings.HasPrefix(t, "[") || !strings.HasSuffix(t, "]") || strings.Contains(t, "\n") {
		return "", false
	}
	t = t[1 : len(t)-1]
	return t, readsBack(t, m, inFlow)
}

// readsBack reports whether tok, written where a value goes (in a flow
// sequence, or after "k: "), parses as one scalar with m's value and tag.
func readsBack(tok string, m *yaml.Node, inFlow bool) bool {
	src := "k: " + tok
	if inFlow {
		src = "[" + tok + "]"
	}
	var doc yaml.Node
	if yaml.Unmarshal([]byte(src), &doc) != nil || len(doc.Content) != 1 {
		return false
	}
	c := doc.Content[0].Content
	if len(c) == 0 {
		return false
	}
	v := c[len(c)-1]
	return len(c) <= 2 && v.Kind == yaml.ScalarNode && v.Value == m.Value && v.ShortTag() == m.ShortTag()
}

// flow edits the { … } or [ … ] d into m: token by token when the keys
// and the length stay, else rewritten on one line.
func (s *splicer) flow(d, m *yaml.Node) bool {
	if identical(d, m) {
		return true
	}
	if !sameShell(d, m) || d.Kind == yaml.ScalarNode || d.Kind == yaml.AliasNode {
		return false
	}
	mark := len(s.edits)
	if s.flowInPlace(d, m) && s.flowAppend(d, m) {
		return true
	}
	s.edits = s.edits[:mark]
	from, ok := s.offset(d.Line, d.Column)
	if !ok {
		return false
	}
	to, ok := s.flowEnd(from)
	if !ok {
		return false
	}
	text, ok := s.flowText(m, d)
	if !ok {
		return false
	}
	s.edits = append(s.edits, edit{from: from, to: to, text: text})
	return true
}

// flowInPlace edits the children of d that m has at the same place (m may
// have more: flowAppend writes those).
func (s *splicer) flowInPlace(d, m *yaml.Node) bool {
	if len(d.Content) > len(m.Content) {
		return false
	}
	for i, dc := range d.Content {
		mc := m.Content[i]
		switch {
		case identical(dc, mc):
		case !sameShell(dc, mc):
			return false
		case dc.Kind == yaml.ScalarNode:
			if !s.scalar(dc, mc, true) {
				return false
			}
		case dc.Kind == yaml.MappingNode || dc.Kind == yaml.SequenceNode:
			if !s.flow(dc, mc) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// flowAppend writes the children m has beyond d's after d's last one (the
// merge appends new keys; the page appends members): ", k: v" before the
// closing bracket, so the collection keeps its layout.
func (s *splicer) flowAppend(d, m *yaml.Node) bool {
	if len(m.Content) == len(d.Content) {
		return true
	}
	if len(d.Content) == 0 {
		return false // "{}": rewritten whole
	}
	at, ok := s.nodeEnd(d.Content[len(d.Content)-1])
	if !ok {
		return false
	}
	var b strings.Builder
	for i := len(d.Content); i < len(m.Content); i++ {
		t, ok := s.flowText(m.Content[i], nil)
		if !ok {
			return false
		}
		if d.Kind == yaml.MappingNode && i%2 == 1 {
			b.WriteString(": " + t)
			continue
		}
		b.WriteString(", " + t)
	}
	s.edits = append(s.edits, edit{from: at, to: at, text: b.String()})
	return true
}

// nodeEnd is the offset just after the scalar or flow collection n as
// written.
func (s *splicer) nodeEnd(n *yaml.Node) (int, bool) {
	if n.Kind == yaml.ScalarNode {
		_, to, ok := s.token(n, true)
		return to, ok
	}
	from, ok := s.offset(n.Line, n.Column)
	if !ok || n.Style&yaml.FlowStyle == 0 {
		return 0, false
	}
	return s.flowEnd(from)
}

// flowText is m in flow syntax on one line; what is unchanged from d (the
// disk's node there, or nil) is copied as written.
func (s *splicer) flowText(m, d *yaml.Node) (string, bool) {
	if m.HeadComment != "" || m.LineComment != "" || m.FootComment != "" || m.Anchor != "" {
		return "", false
	}
	if d != nil && identical(d, m) && d.Line > 0 {
		if d.Kind == yaml.ScalarNode {
			if from, to, ok := s.token(d, true); ok {
				return string(s.data[from:to]), true
			}
		} else if from, ok := s.offset(d.Line, d.Column); ok {
			if to, ok := s.flowEnd(from); ok && !strings.Contains(string(s.data[from:to]), "#") {
				return string(s.data[from:to]), true
			}
		}
	}
	var parts []string
	switch m.Kind {
	case yaml.ScalarNode:
		return scalarText(m, true)
	case yaml.MappingNode:
		for j := 0; j+1 < len(m.Content); j += 2 {
			var dk, dv *yaml.Node
			if d != nil && d.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(d.Content); i += 2 {
					if d.Content[i].Value == m.Content[j].Value {
						dk, dv = d.Content[i], d.Content[i+1]
					}
				}
			}
			k, ok := s.flowText(m.Content[j], dk)
			if !ok {
				return "", false
			}
			v, ok := s.flowText(m.Content[j+1], dv)
			if !ok {
				return "", false
			}
			parts = append(parts, k+": "+v)
		}
		return "{" + strings.Join(parts, ", ") + "}", true
	case yaml.SequenceNode:
		for _, it := range m.Content {
			var di *yaml.Node
			if d != nil && d.Kind == yaml.SequenceNode {
				for _, c := range d.Content {
					if identical(c, it) {
						di = c
						break
					}
				}
			}
			t, ok := s.flowText(it, di)
			if !ok {
				return "", false
			}
			parts = append(parts, t)
		}
		return "[" + strings.Join(parts, ", ") + "]", true
	}
	return "", false
}

// flowEnd is the offset just after the bracket that closes the one at
// from: quoted scalars (opened after a flow indicator or blank) and
// comments are skipped.
func (s *splicer) flowEnd(from int) (int, bool) {
	b := s.data
	if from >= len(b) || (b[from] != '{' && b[from] != '[') {
		return 0, false
	}
	depth := 0
	var prev byte = ' '
	for i := from; i < len(b); i++ {
		c := b[i]
		switch {
		case c == '#' && (prev == ' ' || prev == '\t' || prev == '\n'):
			for i < len(b) && b[i] != '\n' {
				i++
			}
			c = '\n'
		case (c == '"' || c == '\'') && strings.IndexByte("{[,: \t\n", prev) >= 0:
			n := quotedEnd(b[i:])
			if n == 0 {
				return 0, false // a quoted scalar over several lines
			}
			i += n - 1
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
			if depth == 0 {
				return i + 1, true
			}
		}
		prev = c
	}
	return 0, false
}

// identical reports whether a and b render the same: kind, style, tag,
// value, anchor, comments and children.
func identical(a, b *yaml.Node) bool {
	if !sameShell(a, b) || a.Value != b.Value || len(a.Content) != len(b.Content) {
		return false
	}
	for i := range a.Content {
		if !identical(a.Content[i], b.Content[i]) {
			return false
		}
	}
	return true
}

// sameShell: same kind, style, tag, anchor and own comments (children and
// value aside).
func sameShell(a, b *yaml.Node) bool {
	return a.Kind == b.Kind && a.Style == b.Style && a.ShortTag() == b.ShortTag() && a.Anchor == b.Anchor &&
		a.HeadComment == b.HeadComment && a.LineComment == b.LineComment && a.FootComment == b.FootComment
}

// sameTree reports whether a and b hold the same data in the same order
// (kinds, tags, values; styles and comments aside).
func sameTree(a, b *yaml.Node) bool {
	if a.Kind != b.Kind || a.ShortTag() != b.ShortTag() || a.Value != b.Value || len(a.Content) != len(b.Content) {
		return false
	}
	for i := range a.Content {
		if !sameTree(a.Content[i], b.Content[i]) {
			return false
		}
	}
	return true
}

// dash is the column of the "-" that opens sequence item it on its own
// line, 0 when there is none.
func (s *splicer) dash(it *yaml.Node) int {
	if it.Line < 1 || it.Line > s.lines() {
		return 0
	}
	r := []rune(s.line(it.Line - 1))
	if it.Column-1 > len(r) || it.Column < 3 {
		return 0
	}
	before := strings.TrimRight(string(r[:it.Column-1]), " ")
	if !strings.HasSuffix(before, "-") || strings.TrimSpace(strings.TrimSuffix(before, "-")) != "" {
		return 0
	}
	return len([]rune(before))
}

// prefix is the text of line i before column col (1-based): the
// indentation, or "- " and the indentation for an item's first key.
func (s *splicer) prefix(i, col int) string {
	r := []rune(s.line(i))
	if col-1 > len(r) {
		return ""
	}
	return string(r[:col-1])
}
