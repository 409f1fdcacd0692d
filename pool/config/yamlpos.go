package config

import (
	"bytes"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Where a YAML syntax error is. yaml.v3 (go.yaml.in/yaml/v3 v3.0.6,
// decode.go parser.fail) writes "line N" from the 0-based line of the
// error's context mark, and only scanner errors get the +1 that makes it
// 1-based. So every parser error — an unexpected key indentation ("did not
// find expected key"), a list item without "- ", an unclosed or comma-less
// { … } or [ … ] — names the line before the start of the mapping or
// list that encloses the mistake, and one on line 1 names no line at all.
// The mistake itself can be several lines further down.
//
// The parser stops at the first token it cannot use, so the shortest
// prefix of the file (whole lines) that fails with the same message ends on
// the line of that token: the line to edit. For a block mapping or list
// this is exact; inside a { … } or [ … ] spread over lines a prefix that
// ends mid-collection fails the same way, so the line found is where the
// collection could not go on, which is where a ',' or the closing bracket
// is missing (hintFor says so). The column is not known and not claimed.

// parserProblems are yaml.v3's parser error messages (parserc.go), whose
// line is that of the enclosing collection's start, 0-based; hints say in
// words what usually causes them.
var parserProblems = map[string]string{
	"did not find expected key":              "a line indented differently from the keys above it?",
	"did not find expected '-' indicator":    "a list item without '- ', or indented differently from the items above it?",
	"did not find expected ',' or '}'":       "a { … } not closed, or a ',' missing between its entries",
	"did not find expected ',' or ']'":       "a [ … ] not closed, or a ',' missing between its items",
	"did not find expected node content":     "a value missing, or a stray bracket or comma",
	"found undefined tag handle":             "",
	"did not find expected <document start>": "",
}

// problemLine is the 1-based line to edit for the parser message msg in
// data: the end of the shortest whole-line prefix that fails with msg (a
// binary search: once the bad token is in the prefix, every longer prefix
// fails the same way). 0 when no prefix does.
func problemLine(data []byte, msg string) int {
	lines := bytes.SplitAfter(data, []byte("\n"))
	fails := func(k int) bool {
		var doc yaml.Node
		err := yaml.Unmarshal(bytes.Join(lines[:k], nil), &doc)
		return err != nil && yamlMessage(err) == msg
	}
	n := len(lines)
	if n == 0 || !fails(n) {
		return 0
	}
	return sort.Search(n, func(i int) bool { return fails(i + 1) }) + 1
}

// yamlMessage is yaml.v3's message without "yaml: " and "line N: ".
func yamlMessage(err error) string {
	_, msg := yamlLine(err)
	return msg
}

// yamlLine splits yaml.v3's "yaml: [unmarshal errors:\n  ]line N: MSG" into
// N (0 when absent) and MSG.
func yamlLine(err error) (int, string) {
	msg := strings.TrimSpace(strings.TrimPrefix(err.Error(), "yaml: "))
	msg = strings.TrimSpace(strings.TrimPrefix(msg, "unmarshal errors:"))
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if num, tail, ok := strings.Cut(rest, ": "); ok {
			if n, err := strconv.Atoi(num); err == nil {
				return n, tail
			}
		}
	}
	return 0, msg
}

// tabHint is said when a scanner error's line is indented with a tab.
const tabHint = "a tab in the indentation: YAML indents with spaces only"

// indentedWithTab reports whether the 1-based line of data starts with
// blanks that hold a tab.
func indentedWithTab(data []byte, line int) bool {
	lines := bytes.Split(data, []byte("\n"))
	if line < 1 || line > len(lines) {
		return false
	}
	l := lines[line-1]
	indent := l[:len(l)-len(bytes.TrimLeft(l, " \t"))]
	return bytes.IndexByte(indent, '\t') >= 0
}
