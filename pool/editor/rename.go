package editor

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"go.yaml.in/yaml/v3"
)

// A rename cannot go through PUT: merge matches mapping keys by name, so a
// renamed channel or pool would read as one deleted and one new, losing
// its comments and its place. serveRename renames the key in the file's
// own tree instead, with every reference to it in the same file, and saves
// like PUT (validated, atomic, PATH.bak, applied like SIGHUP).

// renameRequest is the body of POST /pool/config/rename.
type renameRequest struct {
	// Kind is "channel" (a pool member's id) or "pool".
	Kind string `json:"kind"`
	From string `json:"from"`
	To   string `json:"to"`
}

func (e *Editor) serveRename(w http.ResponseWriter, r *http.Request) {
	body, berr := readBody(w, r)
	if berr != nil {
		berr.answer(w)
		return
	}
	var req renameRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"errors": []FieldError{{Message: `want {"kind": "channel" or "pool", "from": ID, "to": ID}: ` + err.Error()}}})
		return
	}
	defer e.lock()()
	l := e.loadMatching(w, r)
	if l == nil {
		return
	}
	renamed := deepCopy(l.doc)
	refs, ferr := rename(renamed, req)
	if ferr != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"errors": []FieldError{*ferr}})
		return
	}
	text, err := l.textOf(renamed, true)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	if errs := e.validate(text); len(errs) > 0 {
		writeJSON(w, http.StatusBadRequest, map[string]any{"errors": errs})
		return
	}
	e.save(w, l, renamed, text, map[string]any{"renamed": map[string]any{"kind": req.Kind, "from": req.From, "to": req.To, "references": refs}})
}

// rename renames channel or pool req.From to req.To in doc, in place: the
// key node keeps its comments and position. For a channel every reference
// in the file follows — pools' members items and the member keys of each
// unified model's targets and effort_map — and refs counts them. Errors
// name the path: an unknown kind, an empty or taken id, no such id.
func rename(doc *yaml.Node, req renameRequest) (refs int, _ *FieldError) {
	section := map[string]string{"channel": "channels", "pool": "pools"}[req.Kind]
	if section == "" {
		return 0, &FieldError{Message: fmt.Sprintf("kind %q: want channel or pool", req.Kind)}
	}
	root := doc.Content[0]
	ids := resolveAlias(mapValue(root, section))
	at := section + "." + req.From
	switch {
	case req.To == "" || req.To == Placeholder:
		return 0, &FieldError{Path: at, Message: "the new id is empty"}
	case ids == nil || ids.Kind != yaml.MappingNode || keyNode(ids, req.From) == nil:
		return 0, &FieldError{Path: at, Message: fmt.Sprintf("no %s %q to rename", req.Kind, req.From)}
	case req.To == req.From:
		return 0, &FieldError{Path: at, Message: "the new id is the old one"}
	case keyNode(ids, req.To) != nil:
		return 0, &FieldError{Path: section + "." + req.To, Message: fmt.Sprintf("%s %q exists already", req.Kind, req.To)}
	case req.Kind == "pool" && slices.Contains(reservedPools, req.To):
		return 0, &FieldError{Path: at, Message: fmt.Sprintf("pool id %q is reserved (/pool/%s is a page route); pick another name", req.To, req.To)}
	}
	renameKey(keyNode(ids, req.From), req.To)
	if req.Kind == "channel" {
		refs = renameMember(resolveAlias(mapValue(root, "pools")), req.From, req.To)
	}
	return refs, nil
}

// renameMember renames member from to in every pool of pools: members
// items and the keys of targets and effort_map; it returns how many.
func renameMember(pools *yaml.Node, from, to string) int {
	n := 0
	for i := 0; pools != nil && pools.Kind == yaml.MappingNode && i+1 < len(pools.Content); i += 2 {
		pc := resolveAlias(pools.Content[i+1])
		if pc == nil || pc.Kind != yaml.MappingNode {
			continue
		}
		if ms := resolveAlias(mapValue(pc, "members")); ms != nil && ms.Kind == yaml.SequenceNode {
			for _, m := range ms.Content {
				if m = resolveAlias(m); m.Kind == yaml.ScalarNode && m.Value == from {
					m.Value = to
					n++
				}
			}
		}
		models := resolveAlias(mapValue(pc, "models"))
		for j := 0; models != nil && models.Kind == yaml.SequenceNode && j < len(models.Content); j++ {
			um := resolveAlias(models.Content[j])
			if um == nil || um.Kind != yaml.MappingNode {
				continue
			}
			for _, field := range []string{"targets", "effort_map"} {
				if m := resolveAlias(mapValue(um, field)); m != nil && m.Kind == yaml.MappingNode {
					if k := keyNode(m, from); k != nil && keyNode(m, to) == nil {
						renameKey(k, to)
						n++
					}
				}
			}
		}
	}
	return n
}

// keyNode is the key node named k of mapping m, or nil.
func keyNode(m *yaml.Node, k string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == k {
			return m.Content[i]
		}
	}
	return nil
}

// renameKey gives key node k the name to, as a string (the encoder quotes
// a name that would read back as another type, "123" or "yes").
func renameKey(k *yaml.Node, to string) {
	k.Value, k.Tag = to, "!!str"
	if k.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		k.Style = 0
	}
}
