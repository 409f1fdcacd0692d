package neutral

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// ContentHash is the fallback session identity (SPEC POOL-5): a hash of the
// system prompt and the whole first user message, with cache_control markers
// removed (clients move those between turns) and keys sorted.
// The parts are hashed in place (canonHash), never decoded or copied.
func ContentHash(system, firstUser []byte) string {
	h := sha256.New()
	for _, part := range [][]byte{system, firstUser} {
		wirefmt.CanonHash(h, part, "cache_control", 0)
		h.Write([]byte{0})
	}
	return "content:" + hex.EncodeToString(h.Sum(nil))
}

// EndpointKind tells the call engine how to treat a request.
type EndpointKind int

const (
	EpGenerate    EndpointKind = iota // a model call: failover, binding, commit point
	EpCountTokens                     // passthrough with failover, no binding recorded
	EpModels                          // answered by the pool from its configuration
)

// Endpoint is one route of a flavour.
type Endpoint struct {
	Kind EndpointKind
	// Upstream is the path appended to the channel's base_url.
	Upstream string
	// API, when set, is the API that handles this endpoint instead of the
	// pool's (an "openai" pool serves Chat Completions and Responses).
	API apikind.Kind
	// Model and Stream are read from the path by APIs that put them there
	// (Gemini: /v1beta/models/{model}:streamGenerateContent).
	Model  string
	Stream bool
}

// CallInfo is what the pool reads from one request body.
type CallInfo struct {
	Model  string
	Stream bool
	config.Demands
	// Session hints found in the body, in the order of that
	// rule: MetadataSession (Claude Code's metadata.user_id), PromptCacheKey
	// (Codex), ContentHash (system prompt + whole first user message; read
	// it with SessionContentHash, which hashes on first use).
	MetadataSession string
	PromptCacheKey  string
	ContentHash     string
	// HashContent computes ContentHash from the parts ParseRequest found:
	// the hash of a 16 KiB prompt costs more than the rest of its parse,
	// and most agents name their session in a header.
	HashContent func() string
	// Previous is the Responses previous_response_id; Encrypted: the input
	// carries encrypted reasoning (state.go).
	Previous  string
	Encrypted bool
	// Signed: the history may carry reasoning signatures (Anthropic
	// thinking and redacted_thinking blocks, Gemini thoughtSignature), which
	// a member that did not mint them refuses.
	Signed bool
	// StateRefs are the other stored state a Responses request names, as
	// state keys: its conversation and the items of its
	// item_reference inputs, in that order (pool/api/responses).
	StateRefs []string
	// Budget: the effort was derived from Anthropic thinking.budget_tokens
	// (no output_config.effort), so a mapped effort rewrites the budget.
	Budget bool

	Raw []byte // the client's body
}

// Release drops the call's reference to the client's body once its last
// upstream request is built (a body beyond the replay budget): RewriteBody
// must not be called again.
func (ci *CallInfo) Release() { ci.Raw, ci.HashContent = nil, nil }

// SessionContentHash is ContentHash, computed on the first call from the
// system prompt and first user message ParseRequest found (the last way a
// session is recognised); "" when the request has no user message, or after Release.
func (ci *CallInfo) SessionContentHash() string {
	if ci.ContentHash == "" && ci.HashContent != nil {
		ci.ContentHash, ci.HashContent = ci.HashContent(), nil
	}
	return ci.ContentHash
}

// Accounting is the prompt-cache accounting of one answer (docs/POOL.md,
// why stickiness matters): Input counts uncached input tokens, CacheRead the
// tokens served from the cache, CacheCreation the tokens written to it.
type Accounting struct {
	Input, CacheRead, CacheCreation, Output int64
}

// Verdict is what an upstream event means for the commit point.
type Verdict int

const (
	VPreamble Verdict = iota // no visible output: hold it before the commit point
	VVisible                 // visible output: the commit point
	VEnd                     // the protocol's clean end (message_stop, [DONE], response.completed)
	VError                   // the protocol's error event
)

// Observation is a watcher's reading of one event.
type Observation struct {
	Verdict Verdict
	// For VError: the HTTP status equivalent to the error type, the type and
	// the upstream message.
	ErrStatus int
	ErrType   string
	ErrMsg    string
}

// StreamWatcher follows one streamed attempt.
type StreamWatcher interface {
	// Observe classifies ev. committed tells whether the commit point was
	// already passed (a watcher may then skip the visibility check).
	Observe(ev *wirefmt.SSEEvent, committed bool) Observation
	// Accounting is the accumulated usage so far.
	Usage() Accounting
}

// ErrorEventer is implemented by watchers whose error event depends on the
// stream so far (Responses: sequence_number and response id); the engine
// prefers it to flavour.ErrorEvent after the commit point.
type ErrorEventer interface {
	ErrorEvent(status int, msg string) []byte
}

// StateWatcher is implemented by watchers of stateful APIs (Responses): the
// state keys the stream produced (SPEC POOL-18).
type StateWatcher interface {
	StateKeys() []string
}

// StateReader is implemented by flavours of stateful APIs: the state keys a
// complete answer carries.
type StateReader interface {
	StateKeys(body []byte) []string
}

// CleanEnder is implemented by watchers of protocols whose end event is
// optional in practice (Chat Completions "[DONE]"): EndedCleanly tells that
// an EOF now is a normal end, not a failure.
type CleanEnder interface {
	EndedCleanly() bool
}

// Attempt is one member tried during a call, as listed in an aggregated error
// and counted in status. Message is the upstream's error
// message with keys scrubbed, at most 300 bytes; never a body or a prompt.
type Attempt struct {
	Member  string `json:"member"`
	Class   string `json:"class"`
	Status  int    `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
}

// Clip cuts an upstream message to the 300 bytes Attempt.Message allows.
func Clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// Body is the client's request body as received.
func (ci *CallInfo) Body() []byte { return ci.Raw }
