package envrewrite

import (
	"strings"
)

// LoopbackNoProxy are the entries Rewrite adds to NO_PROXY/no_proxy so the
// child reaches loopback services (the pool, local origins) without the
// proxy. "::1" and "[::1]" are both listed because NO_PROXY
// parsers disagree on brackets.
var LoopbackNoProxy = []string{"localhost", "127.0.0.1", "::1", "[::1]"}

// NodeUseEnvProxy makes Node ≥ 24's built-in fetch honour the proxy
// variables.
const NodeUseEnvProxy = "NODE_USE_ENV_PROXY"

// Rewrite returns the child's environment for a proxy listening at proxyURL
// (normally "http://127.0.0.1:PORT", the bound port), per SPEC ENV-1:
//
//   - the six ProxyVars are set to proxyURL with any credentials removed
//     (the child's proxy URL never carries credentials);
//   - NO_PROXY and no_proxy are both set to the same value: the parent's
//     entries (NoProxyEntries) followed by LoopbackNoProxy, deduplicated
//     case-insensitively, so a stale lowercase variable can never win;
//   - NODE_USE_ENV_PROXY=1;
//   - every other entry, duplicates and entries without "=" included, is
//     kept unchanged and in order (ANTHROPIC_BASE_URL, ANTHROPIC_AUTH_TOKEN…).
//
// Each variable Rewrite sets occurs exactly once in out, appended after the
// kept entries. env is not modified.
//
// notes holds short human lines for the launcher's log: one line when a
// parent proxy variable used a socks*:// URL (replaced: the child speaks
// HTTP to dual-proxy, which uses a socks5/socks5h value as a gateway), and
// one when proxyURL carried credentials. Notes never contain passwords:
// user info is shown as "***".
// Read ParentProxies before calling Rewrite. Native rule; see
// [Names.Rewrite] for the child of another OS.
func Rewrite(env []string, proxyURL string) (out []string, notes []string) {
	return Native.Rewrite(env, proxyURL)
}

// Rewrite is [Rewrite] for a child on the OS of rule n. On a case-insensitive
// OS (Windows) the parent's variables are read whatever their
// spelling, each variable Rewrite sets is written once under its upper-case
// name (HTTPS_PROXY, HTTP_PROXY, ALL_PROXY, NO_PROXY, NODE_USE_ENV_PROXY),
// every other spelling of it is dropped, and the other entries are reduced
// to one per case-folded name (the last occurrence, as os/exec and the
// Windows environment block keep).
func (n Names) Rewrite(env []string, proxyURL string) (out []string, notes []string) {
	clean := StripCredentials(proxyURL)
	if clean != proxyURL {
		notes = append(notes, "credentials removed from the child's proxy URL "+clean)
	}
	var socks []string
	for _, name := range n.distinct(ProxyVars) {
		v, _ := n.Get(env, name)
		if strings.HasPrefix(strings.ToLower(strings.TrimSpace(v)), "socks") {
			socks = append(socks, name+"="+Redact(strings.TrimSpace(v)))
		}
	}
	if len(socks) > 0 {
		notes = append(notes, "replaced SOCKS proxy "+strings.Join(socks, ", ")+
			" with "+clean+" for the child (dual-proxy keeps a SOCKS5 value as a gateway candidate)")
	}
	noProxy := strings.Join(mergeEntries(n.NoProxyEntries(env), strings.Join(LoopbackNoProxy, ",")), ",")

	set := make(map[string]string, len(ProxyVars)+3)
	order := make([]string, 0, len(ProxyVars)+3)
	for _, name := range ProxyVars {
		set[name] = clean
		order = append(order, name)
	}
	set["NO_PROXY"], set["no_proxy"], set[NodeUseEnvProxy] = noProxy, noProxy, "1"
	order = append(order, "NO_PROXY", "no_proxy", NodeUseEnvProxy)
	return n.setAll(env, set, order), notes
}

// setAll drops every occurrence of the keys in set from env and appends
// "key=value" for each key in order. On a case-insensitive OS every
// spelling of a key is dropped, only the first of the keys in order that
// fold alike is written, and the kept entries are deduplicated (dedup).
func (n Names) setAll(env []string, set map[string]string, order []string) []string {
	mine := make(map[string]bool, len(set))
	for k := range set {
		mine[n.fold(k)] = true
	}
	out := make([]string, 0, len(env)+len(order))
	for _, kv := range env {
		if k, ok := splitKey(kv); ok && mine[n.fold(k)] {
			continue
		}
		out = append(out, kv)
	}
	if n.FoldCase {
		out = n.dedup(out)
	}
	for _, k := range n.distinct(order) {
		out = append(out, k+"="+set[k])
	}
	return out
}

// dedup keeps, for each case-folded name, only its last occurrence, in the
// position it has; entries without "=" are kept.
func (n Names) dedup(env []string) []string {
	last := make(map[string]int, len(env))
	for i, kv := range env {
		if k, ok := splitKey(kv); ok {
			last[n.fold(k)] = i
		}
	}
	out := make([]string, 0, len(env))
	for i, kv := range env {
		if k, ok := splitKey(kv); ok && last[n.fold(k)] != i {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// poolUnset are removed from a pool-mode child: the user's
// real keys for the APIs the pool serves, and switches that would send
// Gemini CLI to Vertex AI instead of the pool. Claude Code and the
// Anthropic SDKs send ANTHROPIC_API_KEY as "x-api-key" next to
// ANTHROPIC_AUTH_TOKEN ("Authorization: Bearer"); with both set Claude Code
// warns of an auth conflict and may send the real key, which the pool
// rejects (401) — and the real key has no business leaving the launcher when
// the pool holds the member keys. @google/genai prefers GOOGLE_API_KEY over
// GEMINI_API_KEY.
var poolUnset = []string{"ANTHROPIC_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_GCA"}

// RewritePool returns env prepared for launcher pool mode (SPEC POOL-20,
// POOL-21). baseURL is the pool endpoint ("http://127.0.0.1:PORT/pool/NAME")
// and token the per-launch local token the pool requires. Every pool serves
// all four client APIs, so every agent is pointed at it:
//
//	ANTHROPIC_BASE_URL=baseURL      ANTHROPIC_AUTH_TOKEN=token   (Claude Code, Anthropic SDKs)
//	OPENAI_BASE_URL=baseURL/v1      OPENAI_API_KEY=token         (OpenAI SDKs, Qwen Code)
//	GOOGLE_GEMINI_BASE_URL=baseURL  GEMINI_API_KEY=token         (Gemini CLI, @google/genai)
//
// and poolUnset removed. The LoopbackNoProxy entries are ensured in NO_PROXY
// and no_proxy (already true after Rewrite), so the child reaches the pool
// on 127.0.0.1 directly. Native rule.
func RewritePool(env []string, baseURL, token string) []string {
	return Native.RewritePool(env, baseURL, token)
}

// RewritePool is [RewritePool] for a child on the OS of rule n: on Windows
// an "anthropic_api_key" is removed like "ANTHROPIC_API_KEY", and NO_PROXY
// is written once.
func (n Names) RewritePool(env []string, baseURL, token string) []string {
	out := append([]string(nil), env...)
	for _, k := range poolUnset {
		out = n.Unset(out, k)
	}
	for _, kv := range [][2]string{{"ANTHROPIC_BASE_URL", baseURL}, {"ANTHROPIC_AUTH_TOKEN", token},
		{"OPENAI_BASE_URL", baseURL + "/v1"}, {"OPENAI_API_KEY", token},
		{"GOOGLE_GEMINI_BASE_URL", baseURL}, {"GEMINI_API_KEY", token}} {
		out = n.Set(out, kv[0], kv[1])
	}
	noProxy := strings.Join(mergeEntries(n.NoProxyEntries(out), strings.Join(LoopbackNoProxy, ",")), ",")
	return n.setAll(out, map[string]string{"NO_PROXY": noProxy, "no_proxy": noProxy}, []string{"NO_PROXY", "no_proxy"})
}

// authority locates the user info of a URL-ish string: it returns the index
// where the authority starts and the index of the last "@" inside it, or
// at < 0 when there is none. Works on strings url.Parse rejects, and on
// bare "user:pass@host:port".
func authority(raw string) (start, at int) {
	if i := strings.Index(raw, "://"); i >= 0 {
		start = i + 3
	}
	end := len(raw)
	if i := strings.IndexAny(raw[start:], "/?#"); i >= 0 {
		end = start + i
	}
	at = strings.LastIndexByte(raw[start:end], '@')
	if at >= 0 {
		at += start
	}
	return start, at
}

// Redact returns raw with its user info replaced by "***"
// ("socks5h://u:p@host:1080" → "socks5h://***@host:1080"); raw without
// user info is returned unchanged. It never fails, even on unparsable input.
func Redact(raw string) string {
	start, at := authority(raw)
	if at < 0 {
		return raw
	}
	return raw[:start] + "***" + raw[at:]
}

// StripCredentials returns raw without its user info
// ("http://u:p@127.0.0.1:7896" → "http://127.0.0.1:7896"); raw without user
// info is returned unchanged.
func StripCredentials(raw string) string {
	start, at := authority(raw)
	if at < 0 {
		return raw
	}
	return raw[:start] + raw[at+1:]
}
