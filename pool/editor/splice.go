package editor

import (
	"bytes"
	"sort"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// A save writes the file as an edit of its own text, not as yaml.v3's
// rendering of the tree, which re-indents every line, joins wrapped flow
// mappings, moves line comments and quotes a plain URL inside { … } (its
// emitter takes ':' for a flow indicator): a one-field edit came back as
// a rewrite of the file. spliceDoc walks the disk's tree
// and the merged one side by side and rewrites only what differs:
//
//   - an unchanged entry of a block mapping or item of a block sequence
//     keeps its lines byte for byte, comments included; a deleted one
//     loses its lines and the comment right above them; a new one is
//     rendered by yaml.v3 at its siblings' indentation after the last;
//   - a changed scalar is replaced token by token, the rest of its line
//     staying; a { … } or [ … ] is patched the same way, entries appended
//     after its last one, and rewritten on one line only when it lost one,
//     its untouched scalars copied as written (flow.go);
//   - anything else that changed (kind, style, comments, a multi-line
//     scalar) is rendered by yaml.v3 in place of that entry's lines only.
//
// The result must parse back to the merged tree; when it does not (a
// construct this walk does not know) the caller renders the whole
// document with yaml.v3, as before.

// edit replaces data[from:to] by text.
type edit struct {
	from, to int
	text     string
}

// splicer collects the edits of one document.
type splicer struct {
	data   []byte
	starts []int // byte offset of each line's start, plus len(data)
	indent int   // the file's indentation step (fileIndent)
	edits  []edit
	// renames: a key missing from the merge whose place holds a new key
	// was renamed (rename.go), not deleted and another added.
	renames bool
}

// spliceDoc returns data edited to read as merged (see above), or false
// when it cannot be done safely; renames as in splicer.
func spliceDoc(data []byte, disk, merged *yaml.Node, indent int, renames bool) ([]byte, bool) {
	if len(bytes.TrimSpace(data)) == 0 || len(disk.Content) == 0 || len(merged.Content) == 0 || bytes.Contains(data, []byte("\r")) {
		return nil, false
	}
	s := &splicer{data: data, indent: indent, renames: renames}
	for i := range data {
		if i == 0 || data[i-1] == '\n' {
			s.starts = append(s.starts, i)
		}
	}
	s.starts = append(s.starts, len(data))
	d, m := disk.Content[0], merged.Content[0]
	ok := false
	switch {
	case identical(d, m):
		return data, true
	case d.Kind == yaml.MappingNode && m.Kind == yaml.MappingNode && d.Style&yaml.FlowStyle == 0 && len(d.Content) > 0:
		ok = s.mapping(d, m, 0, s.lines())
	case d.Kind == m.Kind && d.Style&yaml.FlowStyle != 0:
		ok = s.flow(d, m)
	}
	if !ok {
		return nil, false
	}
	out, ok := s.apply()
	if !ok {
		return nil, false
	}
	var back yaml.Node
	if err := yaml.Unmarshal(out, &back); err != nil || len(back.Content) == 0 || !sameTree(back.Content[0], m) {
		return nil, false
	}
	return out, true
}

func (s *splicer) lines() int { return len(s.starts) - 1 }

// line is line i (0-based) without its line break.
func (s *splicer) line(i int) string {
	return strings.TrimRight(string(s.data[s.starts[i]:s.starts[i+1]]), "\n")
}

// offset is the byte offset of the 1-based line and column (in
// characters, as yaml.v3 counts them) of a node.
func (s *splicer) offset(line, col int) (int, bool) {
	if line < 1 || line > s.lines() {
		return 0, false
	}
	off := s.starts[line-1]
	for i := 1; i < col; i++ {
		if off >= s.starts[line] {
			return 0, false
		}
		_, w := utf8.DecodeRune(s.data[off:])
		off += w
	}
	return off, true
}

// blank reports whether line i holds nothing but spaces or a comment.
func (s *splicer) blank(i int) bool {
	t := strings.TrimSpace(s.line(i))
	return t == "" || strings.HasPrefix(t, "#")
}

// headStart is the first of the comment lines right above line key (not
// above lo): the comment that belongs to the entry there.
func (s *splicer) headStart(key, lo int) int {
	for key > lo && strings.HasPrefix(strings.TrimSpace(s.line(key-1)), "#") {
		key--
	}
	return key
}

// contentEnd is end (exclusive) without the blank and comment lines that
// close it, never above key+1.
func (s *splicer) contentEnd(key, end int) int {
	for end > key+1 && s.blank(end-1) {
		end--
	}
	return end
}

// span is one entry of a block mapping or item of a block sequence: its
// node line (key or dash), the first line of its head comment, the end of
// its content and of its lines (the next entry's start).
type span struct{ start, key, content, end int }

// spans lays out entries whose first lines are at (0-based) lines keys
// inside lines [lo, hi); false when they are not in order.
func (s *splicer) spans(keys []int, lo, hi int) ([]span, bool) {
	out := make([]span, len(keys))
	for i, k := range keys {
		if k < lo || k >= hi || (i > 0 && k <= keys[i-1]) {
			return nil, false
		}
		out[i] = span{start: s.headStart(k, max(lo, 0)), key: k}
		if i > 0 {
			out[i].start = max(out[i].start, keys[i-1]+1)
		}
	}
	for i := range out {
		out[i].end = hi
		if i+1 < len(out) {
			out[i].end = out[i+1].start
		}
		out[i].content = s.contentEnd(out[i].key, out[i].end)
	}
	return out, true
}

// mapping edits the block mapping d (its entries inside lines [lo, hi))
// into m. The merge keeps the disk's keys in the disk's order and appends
// new ones, which is what this expects.
func (s *splicer) mapping(d, m *yaml.Node, lo, hi int) bool {
	keys := make([]int, 0, len(d.Content)/2)
	col := d.Content[0].Column
	for i := 0; i+1 < len(d.Content); i += 2 {
		if d.Content[i].Column != col || d.Content[i].Kind != yaml.ScalarNode {
			return false
		}
		keys = append(keys, d.Content[i].Line-1)
	}
	sp, ok := s.spans(keys, lo, hi)
	if !ok {
		return false
	}
	at, onDisk := map[string]int{}, map[string]bool{}
	for j := 0; j+1 < len(m.Content); j += 2 {
		at[m.Content[j].Value] = j
	}
	for i := 0; i+1 < len(d.Content); i += 2 {
		onDisk[d.Content[i].Value] = true
	}
	next, last := 0, -1
	for i, e := range sp {
		k := d.Content[2*i]
		j, kept := at[k.Value]
		if !kept && s.renames && len(m.Content) == len(d.Content) && !onDisk[m.Content[2*i].Value] {
			j, kept = 2*i, true // renamed in place (rename.go)
			onDisk[m.Content[j].Value] = true
		}
		if !kept {
			s.replace(e.start, e.end, "")
			continue
		}
		if j < next {
			return false // reordered
		}
		next = j + 2
		if !s.entry(e, col, k, d.Content[2*i+1], m.Content[j], m.Content[j+1]) {
			return false
		}
		last = e.content
	}
	var add []string
	for j := 0; j+1 < len(m.Content); j += 2 {
		if onDisk[m.Content[j].Value] {
			continue
		}
		if j < next {
			return false
		}
		text, ok := s.render(pair(m.Content[j], m.Content[j+1]), col, "")
		if !ok {
			return false
		}
		add = append(add, text)
	}
	if len(add) > 0 {
		if last < 0 {
			last = sp[0].start
		}
		s.replace(last, last, strings.Join(add, ""))
	}
	return true
}

// entry edits one kept entry e (key dk at column col, value dv) into mk: mv.
func (s *splicer) entry(e span, col int, dk, dv, mk, mv *yaml.Node) bool {
	mark := len(s.edits)
	// A renamed key (rename.go) is a scalar edited in place too.
	keyKept := identical(dk, mk) || (sameShell(dk, mk) && dk.Kind == yaml.ScalarNode && s.scalar(dk, mk, false))
	if keyKept && (identical(dv, mv) || (sameShell(dv, mv) && s.value(e, dv, mv))) {
		return true
	}
	s.edits = s.edits[:mark]
	from, head := e.key, *mk
	if dk.HeadComment != mk.HeadComment {
		if s.prefix(e.key, col) != strings.Repeat(" ", col-1) {
			return false // a "- " item's first key: its comment belongs to the item
		}
		from = e.start
	} else {
		head.HeadComment = ""
	}
	text, ok := s.render(pair(&head, mv), col, s.prefix(e.key, col))
	if !ok {
		return false
	}
	s.replace(from, e.content, text)
	return true
}

// value edits a value whose kind, style, tag, anchor and own comments
// stay: in place when it can (false otherwise).
func (s *splicer) value(e span, dv, mv *yaml.Node) bool {
	switch {
	case dv.Kind == yaml.ScalarNode:
		return dv.Line-1 == e.key && s.scalar(dv, mv, false)
	case dv.Style&yaml.FlowStyle != 0:
		return dv.Line-1 == e.key && s.flow(dv, mv)
	case dv.Kind == yaml.MappingNode && len(dv.Content) > 0 && len(mv.Content) > 0:
		return dv.Line-1 > e.key && s.mapping(dv, mv, e.key+1, e.end)
	case dv.Kind == yaml.SequenceNode && len(dv.Content) > 0:
		return dv.Line-1 > e.key && s.sequence(dv, mv, e.key+1, e.end)
	}
	return false
}

// sequence edits the block sequence d (items inside lines [lo, hi)) into
// m: items edited in place, an item of another shell rendered in place of
// the lines of the one at its place, new items appended; fewer items
// makes it false (the caller renders the entry).
func (s *splicer) sequence(d, m *yaml.Node, lo, hi int) bool {
	if len(m.Content) < len(d.Content) {
		return false
	}
	dashes := make([]int, len(d.Content))
	dashCol := 0
	for i, it := range d.Content {
		c := s.dash(it)
		if c == 0 || (dashCol != 0 && c != dashCol) {
			return false
		}
		dashCol, dashes[i] = c, it.Line-1
	}
	if d.Content[0].Line-1 < lo {
		return false
	}
	sp, ok := s.spans(dashes, lo, hi)
	if !ok {
		return false
	}
	last := -1
	for i, e := range sp {
		di, mi := d.Content[i], m.Content[i]
		last = e.content
		switch {
		case identical(di, mi):
		case sameShell(di, mi) && di.Kind == yaml.ScalarNode:
			if !s.scalar(di, mi, false) {
				return false
			}
		case sameShell(di, mi) && di.Style&yaml.FlowStyle != 0:
			if !s.flow(di, mi) {
				return false
			}
		case sameShell(di, mi) && di.Kind == yaml.MappingNode && len(di.Content) > 0 && len(mi.Content) > 0:
			if !s.mapping(di, mi, e.key, e.end) {
				return false
			}
		default:
			// Another item at this place (a new one where the merge
			// deleted one, samePlace): its lines only, the siblings' stay.
			text, ok := s.render(&yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{mi}}, dashCol, "")
			if !ok {
				return false
			}
			s.replace(e.start, e.content, text)
		}
	}
	if len(m.Content) > len(d.Content) {
		seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: m.Content[len(d.Content):]}
		text, ok := s.render(seq, dashCol, "")
		if !ok {
			return false
		}
		s.replace(last, last, text)
	}
	return true
}

// render is n rendered by yaml.v3 at column col: its first line after
// first (the text before the column on the line it replaces, "" for
// indentation), the others indented.
func (s *splicer) render(n *yaml.Node, col int, first string) (string, bool) {
	doc := &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{n}}
	text, err := encodeDoc(doc, s.indent)
	if err != nil {
		return "", false
	}
	pad := strings.Repeat(" ", col-1)
	if first == "" {
		first = pad
	}
	var b strings.Builder
	for i, l := range strings.Split(strings.TrimSuffix(string(text), "\n"), "\n") {
		switch {
		case i == 0:
			b.WriteString(first)
		case l != "":
			b.WriteString(pad)
		}
		b.WriteString(l + "\n")
	}
	return b.String(), true
}

// replace puts text in place of lines [from, to).
func (s *splicer) replace(from, to int, text string) {
	s.edits = append(s.edits, edit{from: s.starts[from], to: s.starts[to], text: text})
}

// apply returns data with the edits made; false when two overlap.
func (s *splicer) apply() ([]byte, bool) {
	// By offset; at one offset an insertion goes before the edit that
	// starts there (a new entry after the last kept one, whose deleted
	// neighbour follows).
	sort.SliceStable(s.edits, func(i, j int) bool {
		a, b := s.edits[i], s.edits[j]
		return a.from < b.from || (a.from == b.from && a.to == a.from && b.to > b.from)
	})
	var b bytes.Buffer
	pos := 0
	for _, e := range s.edits {
		if e.from < pos {
			return nil, false
		}
		b.Write(s.data[pos:e.from])
		b.WriteString(e.text)
		pos = e.to
	}
	b.Write(s.data[pos:])
	return b.Bytes(), true
}

func pair(k, v *yaml.Node) *yaml.Node {
	return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{k, v}}
}
