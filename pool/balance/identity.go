package balance

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
)

// SessionIdentity returns the session id of a request and where it came
// from, first found wins (SPEC POOL-5; the headers and body fields each coding agent sends,
// docs/POOL.md):
//
//  1. X-Session-Id (any client that wants to say it)
//  2. X-Claude-Code-Session-Id, else the session in metadata.user_id (Claude Code)
//  3. session_id / session-id header, else body prompt_cache_key (Codex)
//  4. x-session-affinity, x-opencode-session (OpenCode), X-Amp-Thread-Id (Amp),
//     X-Qwen-Code-Session-Id (Qwen Code)
//  5. a hash of the system prompt plus the whole first user message
//
// It returns "", "" when nothing identifies the request (no messages).
func SessionIdentity(h http.Header, ci *neutral.CallInfo) (id, source string) {
	type hint struct{ value, source string }
	hints := []hint{
		{h.Get("X-Session-Id"), "x-session-id"},
		{h.Get("X-Claude-Code-Session-Id"), "claude-code-header"},
		{ci.MetadataSession, "claude-code-metadata"},
		{h.Get("Session_id"), "codex-header"},
		{h.Get("Session-Id"), "codex-header"},
		{ci.PromptCacheKey, "prompt-cache-key"},
		{h.Get("X-Session-Affinity"), "x-session-affinity"},
		{h.Get("X-Opencode-Session"), "opencode"},
		{h.Get("X-Amp-Thread-Id"), "amp"},
		{h.Get("X-Qwen-Code-Session-Id"), "qwen-code"},
	}
	for _, x := range hints {
		if x.value != "" {
			return x.value, x.source
		}
	}
	// Last, and only now hashed: most agents name their session above.
	if id := ci.SessionContentHash(); id != "" {
		return id, "content-hash"
	}
	return "", ""
}

// SessionHash is the short form of a session id used in headers, logs and
// status (SPEC POOL-13b): 12 hex digits of SHA-256, never the raw id.
func SessionHash(id string) string {
	if id == "" {
		return ""
	}
	sum := sha256.Sum256([]byte("dual-proxy-session\x00" + id))
	return hex.EncodeToString(sum[:6])
}

// SessionKey is the long form of SessionHash: 32 hex digits of the same
// SHA-256, whose first 12 are SessionHash. A shared state names a session
// by it (only hashed session ids leave the process).
func SessionKey(id string) string {
	sum := sha256.Sum256([]byte("dual-proxy-session\x00" + id))
	return hex.EncodeToString(sum[:16])
}
