// Package wire is what the pool knows about the LLM wire APIs (SPEC POOL-1,
// POOL-7): one Flavour per API — Anthropic Messages, OpenAI Chat Completions,
// OpenAI Responses — that reads a request (model, stream, session hints,
// capability demands), rewrites it for a member, judges a non-streamed
// answer, finds the commit point of a stream (its StreamWatcher) and renders
// the pool's own error documents, error events and pings; and the pieces
// under them: the Server-Sent Events reader and sniffer, the
// Content-Encoding decoder, the top-level JSON key guard and splice. It holds
// no state and opens no connection.
package wire

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/dual-proxy/dual-proxy/pool/apikind"
	"github.com/dual-proxy/dual-proxy/pool/config"
	"github.com/dual-proxy/dual-proxy/pool/internal/jsonscan"
)

// Flavour is one wire API a pool can serve (SPEC POOL-1). The call engine
// (package pool: call.go, stream.go) is flavour-neutral; everything that depends on the
// wire format sits behind this interface: which paths exist, what a request
// says (model, stream, session hints, capability demands), how to rewrite it
// for a member, where the commit point of a stream is, and the error shapes.
// AnthropicFlavour is the Anthropic Messages API; OpenAI Chat Completions and
// Responses implement the same interface next to it.
type Flavour interface {
	// Name is the channel api word of the pools it serves: config.APIAnthropic,
	// config.APIOpenAI or config.APIGemini.
	Name() string
	// API is the wire API it reads and writes.
	API() apikind.Kind
	// Endpoint maps method and the path after "/pool/{pool}" (e.g.
	// "/v1/messages") to an endpoint; false means 404.
	Endpoint(method, path string) (Endpoint, bool)
	// ParseRequest reads the client's JSON body. An error is the client's
	// fault and is answered 400 in ErrorBody's shape.
	ParseRequest(ep Endpoint, body []byte) (*CallInfo, error)
	// RewriteBody returns the body for one member: model set to target and,
	// when effort is not "", the effort field set to it (SPEC POOL-2, POOL-12).
	RewriteBody(ci *CallInfo, target, effort string) ([]byte, error)
	// NewWatcher returns the commit-point detector for one streamed attempt.
	NewWatcher() StreamWatcher
	// InspectBody reads a non-streamed 2xx answer: its usage and, when it is
	// not a usable answer, the failure class and a message (SPEC POOL-7):
	// config.ClassEmpty for an answer of the API's success shape with no content,
	// config.ClassServer for a body that is not JSON of that shape (a captive
	// portal's HTML, a gateway's "{}") or that carries an "error" object.
	// class "" means usable.
	InspectBody(ep Endpoint, body []byte) (u Usage, class, msg string)
	// ParseError extracts the error type and message of an upstream error
	// body (JSON error document or error event data).
	ParseError(body []byte) (typ, msg string)
	// ErrorBody renders a pool error document with HTTP status status.
	ErrorBody(status int, msg string, attempts []Attempt) []byte
	// ErrorEvent renders the protocol's in-stream error event, sent when an
	// upstream fails after the commit point (SPEC POOL-7).
	ErrorEvent(status int, msg string) []byte
	// PingEvent is the keepalive event the pool sends on a quiet stream.
	PingEvent() []byte
}

// flavours are the wire APIs the pool serves, by Channel.API.
var flavours = map[string]Flavour{config.APIAnthropic: AnthropicFlavour{}, config.APIOpenAI: ChatFlavour{},
	config.APIOpenAIChat: ChatFlavour{}, config.APIGemini: GeminiFlavour{}}

// ForAPI returns the flavour serving a pool of API api (config.APIAnthropic
// or config.APIOpenAI), or nil when this build has none.
func ForAPI(api string) Flavour { return flavours[api] }

// byKind are the flavours by the wire API they read and write.
var byKind = map[apikind.Kind]Flavour{apikind.Anthropic: AnthropicFlavour{}, apikind.Chat: ChatFlavour{},
	apikind.Responses: ResponsesFlavour{}, apikind.Gemini: GeminiFlavour{}}

// Of returns the flavour of wire API k (the one that reads a member's
// answers of that API), or nil for a Kind that is none of the four.
func Of(k apikind.Kind) Flavour { return byKind[k] }

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
	// Session hints found in the body (SPEC POOL-5), in the order of that
	// rule: MetadataSession (Claude Code's metadata.user_id), PromptCacheKey
	// (Codex), ContentHash (system prompt + whole first user message; read
	// it with SessionContentHash, which hashes on first use).
	MetadataSession string
	PromptCacheKey  string
	ContentHash     string
	// hashContent computes ContentHash from the parts ParseRequest found:
	// the hash of a 16 KiB prompt costs more than the rest of its parse,
	// and most agents name their session in a header.
	hashContent func() string
	// Previous is the Responses previous_response_id; Encrypted: the input
	// carries encrypted reasoning (SPEC POOL-18, state.go).
	Previous  string
	Encrypted bool
	// Signed: the history may carry reasoning signatures (Anthropic
	// thinking and redacted_thinking blocks, Gemini thoughtSignature;
	// SPEC POOL-18, signatures.go).
	Signed bool
	// StateRefs are the other stored state a Responses request names, as
	// state keys: its conversation (ConvKey) and the items of its
	// item_reference inputs (ItemKey), in that order (SPEC POOL-18).
	StateRefs []string
	// budget: the effort was derived from Anthropic thinking.budget_tokens
	// (no output_config.effort), so a mapped effort rewrites the budget.
	budget bool

	raw []byte // the client's body
}

// Release drops the call's reference to the client's body once its last
// upstream request is built (a body beyond the replay budget, SPEC
// POOL-17): RewriteBody must not be called again.
func (ci *CallInfo) Release() { ci.raw, ci.hashContent = nil, nil }

// SessionContentHash is ContentHash, computed on the first call from the
// system prompt and first user message ParseRequest found (SPEC POOL-5's
// last rule); "" when the request has no user message, or after Release.
func (ci *CallInfo) SessionContentHash() string {
	if ci.ContentHash == "" && ci.hashContent != nil {
		ci.ContentHash, ci.hashContent = ci.hashContent(), nil
	}
	return ci.ContentHash
}

// Usage is the prompt-cache accounting of one answer (docs/POOL.md,
// why stickiness matters): Input counts uncached input tokens, CacheRead the
// tokens served from the cache, CacheCreation the tokens written to it.
type Usage struct {
	Input, CacheRead, CacheCreation, Output int64
}

// Verdict is what an upstream event means for the commit point.
type Verdict int

const (
	VPreamble Verdict = iota // no visible output: hold it before the commit point
	VVisible                 // visible output: the commit point (SPEC POOL-7)
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
	Observe(ev *SSEEvent, committed bool) Observation
	// Usage is the accumulated usage so far.
	Usage() Usage
}

// ErrorEventer is implemented by watchers whose error event depends on the
// stream so far (Responses: sequence_number and response id); the engine
// prefers it to flavour.ErrorEvent after the commit point.
type ErrorEventer interface {
	ErrorEvent(status int, msg string) []byte
}

// StateWatcher is implemented by watchers of stateful APIs (Responses): the
// state keys the stream produced (POOL-18, state.go).
type StateWatcher interface {
	StateKeys() []string
}

// StateReader is implemented by flavours of stateful APIs: the state keys a
// complete answer carries (POOL-18).
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
// (SPEC POOL-11) and counted in status. Message is the upstream's error
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

// ErrBodyTooLarge is ReadBody's error for a body above its limit.
var ErrBodyTooLarge = errors.New("request body too large")

// ReadBody reads at most limit bytes of r.
func ReadBody(r io.Reader, limit int64) ([]byte, error) {
	return ReadBodySized(r, -1, limit)
}

// ReadBodySized reads at most limit bytes of r into one buffer of the
// announced size n (a Content-Length; -1 unknown), so a large body is held
// once instead of in doubling copies (SPEC POOL-17). n above limit is
// ErrBodyTooLarge at once, nothing read.
func ReadBodySized(r io.Reader, n, limit int64) ([]byte, error) {
	if n > limit {
		return nil, ErrBodyTooLarge
	}
	if n > 0 {
		buf := make([]byte, n)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		var one [1]byte
		if k, _ := r.Read(one[:]); k == 0 {
			return buf, nil
		}
		return nil, ErrBodyTooLarge // more than announced
	}
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, ErrBodyTooLarge
	}
	return b, nil
}

// guardedKeys are the top-level request keys the pool reads and rewrites.
// encoding/json (ParseRequest) takes the last of several keys that match
// case-insensitively, while a member's server may take the first: two such
// keys would let the pool check one model id and send another, bypassing the
// pool's model list. CheckTopLevel refuses them.
var guardedKeys = []string{"model", "stream", "thinking", "output_config", "reasoning_effort", "reasoning"}

// CheckTopLevel refuses (with the 400 message) a request body whose top-level
// object holds more than one key equal to a guarded key under Unicode case
// folding (strings.EqualFold, the rule encoding/json matches field names
// by), a "model" that is not a string ("model must be a string") or a
// "stream" that is not a boolean ("stream must be a boolean"). A body that
// is not a JSON object passes; ParseRequest reports it.
func CheckTopLevel(body []byte) error {
	seen := make([]int, len(guardedKeys))
	var err error
	jsonscan.EachMember(body, func(k string, vs, ve int) bool {
		for i, g := range guardedKeys {
			if strings.EqualFold(k, g) {
				if seen[i]++; seen[i] > 1 {
					err = fmt.Errorf("%s: the request body has more than one %q key (keys are matched case-insensitively)", g, g)
					return false
				}
			}
		}
		v := string(body[vs:min(ve, vs+5)])
		switch {
		case strings.EqualFold(k, "model") && body[vs] != '"':
			err = errors.New("model must be a string")
		case strings.EqualFold(k, "stream") && (ve-vs > 5 || (v != "true" && v != "false" && v != "null")):
			err = errors.New("stream must be a boolean")
		}
		return err == nil
	})
	return err
}

// spliceTopLevel replaces the value of key in the top-level JSON object body
// with val (body itself when the value is already val), leaving every other
// byte as the client sent it (so the upstream sees the same prompt bytes). The key is matched like encoding/json matches
// it (strings.EqualFold; CheckTopLevel has refused duplicates). ok is false
// when body is not an object or has no such key.
func spliceTopLevel(body []byte, key string, val []byte) (out []byte, ok bool) {
	jsonscan.EachMember(body, func(k string, vs, ve int) bool {
		if !strings.EqualFold(k, key) {
			return true
		}
		if ok = true; bytes.Equal(body[vs:ve], val) {
			out = body // unchanged (the usual model id = target): no copy
			return false
		}
		out = make([]byte, 0, len(body)-(ve-vs)+len(val))
		out = append(append(append(out, body[:vs]...), val...), body[ve:]...)
		return false
	})
	return out, ok
}

// Body is the client's request body as received.
func (ci *CallInfo) Body() []byte { return ci.raw }
