package editor

import (
	"bytes"
	"fmt"
	"net/url"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/dual-proxy/dual-proxy/pool/config"
)

// Placeholder stands for a secret in everything the editor sends out: a
// channel's literal api_key and the password of a base_url's userinfo. In
// an edited document it means "keep the value on disk".
const Placeholder = "***"

// The file is edited as a yaml.Node tree, never re-marshalled from structs,
// so comments, key order and the style of untouched nodes survive a save.
// merge lays the edited document (the page sends JSON, which is YAML) over
// the tree read from disk:
//
//   - mapping: the disk's keys in the disk's order, each merged with the
//     edited value; keys the edit lacks are deleted; new keys are appended in
//     the edit's order.
//   - sequence: the edit's order; an item is matched with the disk's item of
//     the same "id" (mappings) or the same value (scalars), else with the
//     unmatched disk item at its place (its id or value was edited), so its
//     comments stay — for items with an id only when the rest mostly
//     stayed too (samePlace): a new item there gets no comments.
//   - scalar: the disk node keeps its comments and, for strings, its quoting;
//     only value and tag change.
//   - api_key (and a base_url password) equal to Placeholder: the disk's
//     value is kept; with no value on disk that is an error at that path.

// parseDoc parses YAML (or JSON) into a document node; an empty text is an
// empty mapping.
func parseDoc(data []byte) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, config.YAMLError(err, data)
	}
	if len(doc.Content) == 0 {
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}}
	}
	if doc.Content[0].Kind != yaml.MappingNode {
		return nil, &config.ConfigError{Msg: "the document must be a mapping (channels, pools, state)"}
	}
	if err := duplicateKey(doc.Content[0], ""); err != nil {
		return nil, err
	}
	return &doc, nil
}

// encodeDoc renders a document with the given indentation (the file's own).
func encodeDoc(doc *yaml.Node, indent int) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(indent)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// fileIndent is the indentation the file uses (the first indented line of
// a block mapping), 2 when none is found; yaml.v3 would otherwise write 4.
func fileIndent(data []byte) int {
	for _, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimLeft(line, " ")
		if n := len(line) - len(trimmed); n > 0 && trimmed != "" && !strings.HasPrefix(trimmed, "#") && !strings.HasPrefix(trimmed, "- ") {
			return min(max(n, 2), 8)
		}
	}
	return 2
}

// merge returns the disk document with the edited one laid over it (see
// above). Errors are *config.ConfigError at the path of a placeholder that
// has no stored value.
func merge(disk, edit *yaml.Node) (*yaml.Node, error) {
	out := *disk
	m := merger{textual: hasComments(edit)}
	root, err := m.node(disk.Content[0], edit.Content[0], "")
	if err != nil {
		return nil, err
	}
	out.Content = []*yaml.Node{root}
	return &out, nil
}

func (mg merger) node(dst, src *yaml.Node, path string) (*yaml.Node, error) {
	if src.Kind == yaml.ScalarNode && src.Value == Placeholder && isSecretPath(path) {
		return keepSecret(dst, path)
	}
	if dst == nil || dst.Kind != src.Kind || dst.Kind == yaml.AliasNode {
		n := fresh(src)
		if dst != nil {
			n.HeadComment, n.LineComment, n.FootComment = dst.HeadComment, dst.LineComment, dst.FootComment
		}
		return n, placeholdersLeft(n, path)
	}
	switch dst.Kind {
	case yaml.MappingNode:
		return mg.mapping(dst, src, path)
	case yaml.SequenceNode:
		return mg.sequence(dst, src, path)
	}
	if strings.HasSuffix(path, ".base_url") {
		src = &yaml.Node{Kind: yaml.ScalarNode, Tag: src.Tag, Value: restoreURLPassword(dst.Value, src.Value)}
	}
	if isProxyURLPath(path) && src.Value != dst.Value && src.Value == redactGateway(dst.Value) ||
		path == "proxy.health-url" && src.Value != dst.Value && src.Value == redactHealthURL(dst.Value) ||
		isStateURLPath(path) && src.Value != dst.Value && src.Value == redactURLPassword(dst.Value) {
		src = &yaml.Node{Kind: yaml.ScalarNode, Tag: src.Tag, Value: dst.Value}
	}
	n := *dst
	mg.comments(&n, src)
	if n.Value == src.Value && n.ShortTag() == src.ShortTag() {
		return &n, nil
	}
	n.Value, n.Tag = src.Value, src.ShortTag()
	if n.Tag != "!!str" || n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		n.Style = 0
	}
	return &n, nil
}

func (mg merger) mapping(dst, src *yaml.Node, path string) (*yaml.Node, error) {
	n := *dst
	mg.comments(&n, src)
	n.Content = nil
	edited := map[string]*yaml.Node{}
	editedKey := map[string]*yaml.Node{}
	for i := 0; i+1 < len(src.Content); i += 2 {
		edited[src.Content[i].Value] = src.Content[i+1]
		editedKey[src.Content[i].Value] = src.Content[i]
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(dst.Content); i += 2 {
		k := dst.Content[i]
		v, ok := edited[k.Value]
		if !ok || seen[k.Value] {
			continue // deleted by the edit
		}
		seen[k.Value] = true
		m, err := mg.node(dst.Content[i+1], v, join(path, k.Value))
		if err != nil {
			return nil, err
		}
		kc := *k
		mg.comments(&kc, editedKey[k.Value])
		n.Content = append(n.Content, &kc, m)
	}
	for i := 0; i+1 < len(src.Content); i += 2 {
		k := src.Content[i]
		if seen[k.Value] {
			continue
		}
		seen[k.Value] = true
		m, err := mg.node(nil, src.Content[i+1], join(path, k.Value))
		if err != nil {
			return nil, err
		}
		n.Content = append(n.Content, fresh(k), m)
	}
	return &n, nil
}

func (mg merger) sequence(dst, src *yaml.Node, path string) (*yaml.Node, error) {
	n := *dst
	mg.comments(&n, src)
	n.Content = nil
	used := make([]bool, len(dst.Content))
	matches := make([]*yaml.Node, len(src.Content))
	proxyURLs := isProxyURLPath(path + "[0]")
	for i, item := range src.Content {
		for j, d := range dst.Content {
			if !used[j] && (sameItem(d, item) || proxyURLs && d.Kind == yaml.ScalarNode && redactGateway(d.Value) == item.Value) {
				matches[i], used[j] = d, true
				break
			}
		}
	}
	// An item whose id (or value) the edit changed matches nothing: the
	// disk's item at its place that no edited item claimed is that item,
	// edited, and keeps its comments, key order and style (a model's id
	// changed on the page came back as a new item: its comments were lost)
	// — unless both have an id and the rest differs too (samePlace): then
	// the disk's item was deleted and a new one added there, and its
	// comments go with it.
	for i, item := range src.Content {
		if matches[i] == nil && i < len(dst.Content) && !used[i] && dst.Content[i].Kind == item.Kind && samePlace(dst.Content[i], item) {
			matches[i], used[i] = dst.Content[i], true
		}
	}
	for i, item := range src.Content {
		m, err := mg.node(matches[i], item, fmt.Sprintf("%s[%d]", path, i))
		if err != nil {
			return nil, err
		}
		n.Content = append(n.Content, m)
	}
	return &n, nil
}

// merger lays an edit over the disk tree. textual: the edit has comments
// of its own (a YAML text, not the page's JSON), so its comments replace
// the disk's, removed ones included; otherwise the disk's stay.
type merger struct{ textual bool }

func (mg merger) comments(n, src *yaml.Node) {
	if mg.textual {
		n.HeadComment, n.LineComment, n.FootComment = src.HeadComment, src.LineComment, src.FootComment
	}
}

// hasComments reports whether any node of n carries a comment.
func hasComments(n *yaml.Node) bool {
	if n.HeadComment != "" || n.LineComment != "" || n.FootComment != "" {
		return true
	}
	for _, c := range n.Content {
		if hasComments(c) {
			return true
		}
	}
	return false
}

// sameItem: scalars by value, mappings by their "id".
func sameItem(a, b *yaml.Node) bool {
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case yaml.ScalarNode:
		return a.Value == b.Value
	case yaml.MappingNode:
		ida, idb := mapValue(a, "id"), mapValue(b, "id")
		return ida != nil && idb != nil && ida.Value == idb.Value
	}
	return false
}

// samePlace reports whether edited item b, which no disk item matches by
// id, is disk item a at its place with its id edited: always for scalars
// and items without an id (only the place tells), else when at least half
// of the other keys of either hold the same value in both (an id edited
// alone, or with one field of two). One PUT that deleted a and added a
// different b there gave b a's comments.
func samePlace(a, b *yaml.Node) bool {
	if a.Kind != yaml.MappingNode || mapValue(a, "id") == nil || mapValue(b, "id") == nil {
		return true
	}
	keys := map[string]bool{}
	for _, m := range []*yaml.Node{a, b} {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if k := m.Content[i].Value; k != "id" {
				keys[k] = true
			}
		}
	}
	same := 0
	for k := range keys {
		if va, vb := mapValue(a, k), mapValue(b, k); va != nil && vb != nil && sameTree(va, vb) {
			same++
		}
	}
	return 2*same >= len(keys)
}

// fresh is a deep copy of an edited node in the file's usual style: block
// mappings, flow sequences of scalars, plain scalars where they read back
// the same (the encoder quotes the rest).
func fresh(src *yaml.Node) *yaml.Node {
	n := &yaml.Node{Kind: src.Kind, Tag: src.ShortTag(), Value: src.Value,
		HeadComment: src.HeadComment, LineComment: src.LineComment, FootComment: src.FootComment}
	if n.Kind == yaml.DocumentNode || n.Kind == yaml.AliasNode {
		n.Kind, n.Tag, n.Value = yaml.ScalarNode, "!!null", "null"
		return n
	}
	if src.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		n.Style = src.Style
	}
	scalars := true
	for _, c := range src.Content {
		n.Content = append(n.Content, fresh(c))
		scalars = scalars && c.Kind == yaml.ScalarNode
	}
	if n.Kind == yaml.SequenceNode && scalars && len(n.Content) > 0 {
		n.Style = yaml.FlowStyle
	}
	return n
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// isSecretPath: channels.ID.api_key.
func isSecretPath(path string) bool {
	parts := strings.Split(path, ".")
	return len(parts) >= 3 && parts[0] == "channels" && parts[len(parts)-1] == "api_key"
}

func keepSecret(dst *yaml.Node, path string) (*yaml.Node, error) {
	if dst == nil || dst.Kind != yaml.ScalarNode || dst.Value == "" {
		return nil, &config.ConfigError{Path: path, Msg: Placeholder + " keeps the stored key, but there is none here: type the key or use api_key_env"}
	}
	n := *dst
	return &n, nil
}

// placeholdersLeft reports a Placeholder api_key inside a new subtree (a new
// or renamed channel has no stored key to keep).
func placeholdersLeft(n *yaml.Node, path string) error {
	if n.Kind == yaml.ScalarNode && n.Value == Placeholder && isSecretPath(path) {
		return &config.ConfigError{Path: path, Msg: Placeholder + " keeps the stored key, but there is none here: type the key or use api_key_env"}
	}
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := placeholdersLeft(n.Content[i+1], join(path, n.Content[i].Value)); err != nil {
				return err
			}
		}
	}
	return nil
}

func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// redact returns a deep copy of doc with every channel's api_key and every
// base_url password replaced by Placeholder, and the proxy section's and
// the state's URLs masked as the other views mask them. The copy keeps the
// document's alias graph (an alias points at the copied anchor), and keys are
// found through aliases, so neither `b: *a` nor `api_key: &k …` with `*k`
// elsewhere can carry a key past the redaction.
func redact(doc *yaml.Node) *yaml.Node {
	c := deepCopy(doc)
	for _, ch := range channelNodes(c) {
		if k := resolveAlias(mapValue(ch, "api_key")); k != nil && k.Kind == yaml.ScalarNode && k.Value != "" {
			k.Value, k.Tag, k.Style = Placeholder, "!!str", 0
		}
		if u := resolveAlias(mapValue(ch, "base_url")); u != nil && u.Kind == yaml.ScalarNode {
			u.Value = redactURLPassword(u.Value)
		}
	}
	for _, u := range proxyURLNodes(c) {
		u.Value = redactGateway(u.Value)
	}
	if h := resolveAlias(mapValue(resolveAlias(mapValue(c.Content[0], "proxy")), "health-url")); h != nil && h.Kind == yaml.ScalarNode {
		h.Value = redactHealthURL(h.Value)
	}
	if u := stateURLNode(c); u != nil {
		u.Value = redactURLPassword(u.Value)
	}
	return c
}

// The health URL (proxy.health-url) and the shared state's redis URL
// (state, or state.url) may hold a password, the health URL a token in its
// query: the editor shows them as the settings API and the status document
// do (SPEC POOL-15), https://u:***@host/h?*** and redis://u:***@host:port,
// and a masked value saved back means the stored one (merger.node).

// redactHealthURL is a health URL with its query as "?***" and its
// password as Placeholder.
func redactHealthURL(raw string) string {
	if i := strings.IndexByte(raw, '?'); i >= 0 {
		raw = raw[:i+1] + Placeholder
	}
	return redactURLPassword(raw)
}

// isStateURLPath: the state URL written as a scalar (state) or in the
// state mapping (state.url).
func isStateURLPath(path string) bool { return path == "state" || path == "state.url" }

// stateURLNode is the scalar node of the state URL, nil when there is none.
func stateURLNode(doc *yaml.Node) *yaml.Node {
	st := resolveAlias(mapValue(doc.Content[0], "state"))
	if st != nil && st.Kind == yaml.MappingNode {
		st = resolveAlias(mapValue(st, "url"))
	}
	if st == nil || st.Kind != yaml.ScalarNode {
		return nil
	}
	return st
}

// The proxy settings' section holds gateway URLs whose
// passwords the editor masks like a base_url's: proxy.upstream-url, every
// item of proxy.gateway, and proxy.upstream-host (the settings refuse a
// user:pass@ there; a file written by hand may still hold one).

// isProxyURLPath: proxy.upstream-url, proxy.upstream-host or an item of
// proxy.gateway.
func isProxyURLPath(path string) bool {
	return path == "proxy.upstream-url" || path == "proxy.upstream-host" || strings.HasPrefix(path, "proxy.gateway[")
}

// redactGateway is a gateway value with its password as Placeholder: with
// or without a scheme (user:pass@host:port), and when it does not parse
// as a URL ("http://u:pw@[::1"): the userinfo is everything before the
// last '@', as the proxy reads it, so no spelling shows the
// password.
func redactGateway(raw string) string {
	prefix, rest := "", raw
	if i := strings.Index(raw, "://"); i >= 0 {
		prefix, rest = raw[:i+3], raw[i+3:]
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return raw
	}
	user, _, ok := strings.Cut(rest[:at], ":")
	if !ok {
		return raw // a user name alone: nothing secret
	}
	return prefix + user + ":" + Placeholder + rest[at:]
}

// proxyURLNodes are the scalar nodes of the proxy section's gateway URLs.
func proxyURLNodes(doc *yaml.Node) []*yaml.Node {
	sec := resolveAlias(mapValue(doc.Content[0], "proxy"))
	if sec == nil || sec.Kind != yaml.MappingNode {
		return nil
	}
	var out []*yaml.Node
	for _, key := range []string{"upstream-url", "upstream-host"} {
		if u := resolveAlias(mapValue(sec, key)); u != nil && u.Kind == yaml.ScalarNode {
			out = append(out, u)
		}
	}
	if l := resolveAlias(mapValue(sec, "gateway")); l != nil && l.Kind == yaml.SequenceNode {
		for _, g := range l.Content {
			if g = resolveAlias(g); g.Kind == yaml.ScalarNode {
				out = append(out, g)
			}
		}
	}
	return out
}

// resolveAlias follows an alias node to its anchor (at most 16 hops, as
// pool/config does); other nodes are returned as they are.
func resolveAlias(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && n.Alias != nil && i < 16; i++ {
		n = n.Alias
	}
	return n
}

// channelNodes are the mapping nodes under channels, in file order (a channel
// written as an alias of a mapping is that mapping).
func channelNodes(doc *yaml.Node) []*yaml.Node {
	var out []*yaml.Node
	if chans := resolveAlias(mapValue(doc.Content[0], "channels")); chans != nil && chans.Kind == yaml.MappingNode {
		for i := 1; i < len(chans.Content); i += 2 {
			if ch := resolveAlias(chans.Content[i]); ch.Kind == yaml.MappingNode {
				out = append(out, ch)
			}
		}
	}
	return out
}

// hasLiteralKey reports whether any channel holds an api_key in the file.
func hasLiteralKey(doc *yaml.Node) bool {
	for _, ch := range channelNodes(doc) {
		if k := resolveAlias(mapValue(ch, "api_key")); k != nil && k.Value != "" {
			return true
		}
	}
	return false
}

// deepCopy returns a copy of the tree under n that shares no node with it.
func deepCopy(n *yaml.Node) *yaml.Node {
	return copyGraph(n, map[*yaml.Node]*yaml.Node{})
}

// copyGraph copies n once per node: an alias in the copy points at the copied
// anchor, never back into the original tree (the redacted copy must
// not reach the unredacted key through an alias).
func copyGraph(n *yaml.Node, seen map[*yaml.Node]*yaml.Node) *yaml.Node {
	if c, ok := seen[n]; ok {
		return c
	}
	c := *n
	seen[n] = &c
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, k := range n.Content {
		c.Content[i] = copyGraph(k, seen)
	}
	if n.Alias != nil {
		c.Alias = copyGraph(n.Alias, seen)
	}
	return &c
}

// redactURLPassword is a URL with its password as Placeholder; a value
// url.Parse refuses ("https://u:pw@[::1") is masked as a gateway's
// (redactGateway), never shown as it is.
func redactURLPassword(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return redactGateway(raw)
	}
	if u.User == nil {
		return raw
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), Placeholder)
		return strings.Replace(u.String(), url.QueryEscape(Placeholder), Placeholder, 1)
	}
	return raw
}

// restoreURLPassword: an edited base_url that is the disk's with its
// password shown as Placeholder gets the disk's password back.
func restoreURLPassword(disk, edited string) string {
	if edited != disk && edited == redactURLPassword(disk) {
		return disk
	}
	return edited
}
