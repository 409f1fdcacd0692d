package editor

import (
	"fmt"
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/dual-proxy/dual-proxy/pool/config"
)

// FieldError is one validation error at a YAML path (SPEC POOL-3), as the
// validate and save calls return them: the page shows each at its field.
type FieldError struct {
	// Path is the YAML path, e.g. "channels.a.base_url"; "" for the file.
	Path    string `json:"path"`
	Message string `json:"message"`
	// Line and Column are the 1-based position in the document the error
	// is about (the edited document for a parse error or a duplicate key,
	// else the merged one the validate call returns as yaml); 0 when
	// unknown.
	Line   int `json:"line,omitempty"`
	Column int `json:"column,omitempty"`
}

// reservedPools are pool ids the /pool/ routes already use.
var reservedPools = []string{"config", "status"}

// Validate parses data as config.ParseConfig does (getenv resolves
// api_key_env) and returns every error it finds, each with its YAML path
// and position, in file order; nil when the configuration is valid. They
// are exactly ParseConfig's errors (plus the pool ids the page's routes
// shadow), so a save never accepts what a reload would refuse.
func Validate(data []byte, getenv func(string) string) []FieldError {
	_, err := config.ParseConfig(data, getenv)
	var errs []FieldError
	if err != nil {
		errs = fieldErrors(err)
	}
	return append(errs, poolIDErrors(data)...)
}

// poolIDErrors: pool ids the page's routes shadow.
func poolIDErrors(data []byte) []FieldError {
	doc, err := parseDoc(data)
	if err != nil {
		return nil
	}
	var out []FieldError
	pools := mapValue(doc.Content[0], "pools")
	for i := 0; pools != nil && pools.Kind == yaml.MappingNode && i+1 < len(pools.Content); i += 2 {
		if k := pools.Content[i]; slices.Contains(reservedPools, k.Value) {
			out = append(out, FieldError{Path: "pools." + k.Value, Message: fmt.Sprintf("pool id %q is reserved (/pool/%s is a page route); pick another name", k.Value, k.Value), Line: k.Line, Column: k.Column})
		}
	}
	return out
}

func fieldError(err error) FieldError { return fieldErrors(err)[0] }

// fieldErrors are err's *config.ConfigErrors as FieldErrors (err itself
// when it holds none).
func fieldErrors(err error) []FieldError {
	ces := config.AllErrors(err)
	if ces == nil {
		return []FieldError{{Message: err.Error()}}
	}
	out := make([]FieldError, len(ces))
	for i, ce := range ces {
		out[i] = FieldError{Path: ce.Path, Message: ce.Msg, Line: ce.Line, Column: ce.Column}
	}
	return out
}

func scalar(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v} }

// mapOf builds a mapping from key, value pairs (keys as strings).
func mapOf(kv ...any) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for i := 0; i+1 < len(kv); i += 2 {
		k, _ := kv[i].(string)
		m.Content = append(m.Content, scalar(k), kv[i+1].(*yaml.Node))
	}
	return m
}

func docOf(root *yaml.Node) []byte {
	b, _ := encodeDoc(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{root}}, 2)
	return b
}

// duplicateKey is the first key of n's mappings (n included) that repeats
// an earlier key of its mapping, as an error at the repeat's path and
// position: merge could not tell which of the two an edit means, and the
// reload would refuse the file. nil when there is none.
func duplicateKey(n *yaml.Node, p string) error {
	switch n.Kind {
	case yaml.MappingNode:
		seen := map[string]*yaml.Node{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			kp := k.Value
			if p != "" {
				kp = p + "." + k.Value
			}
			if first := seen[k.Value]; first != nil {
				return &config.ConfigError{Path: kp, Msg: fmt.Sprintf("duplicate key (first at line %d)", first.Line), Line: k.Line, Column: k.Column}
			}
			seen[k.Value] = k
			if err := duplicateKey(n.Content[i+1], kp); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for i, v := range n.Content {
			if err := duplicateKey(v, fmt.Sprintf("%s[%d]", p, i)); err != nil {
				return err
			}
		}
	}
	return nil
}
