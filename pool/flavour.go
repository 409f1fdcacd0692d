package pool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/dual-proxy/dual-proxy/pool/config"
)

// flavour is one wire API a pool can serve (SPEC POOL-1). The call engine
// (call.go, stream.go) is flavour-neutral; everything that depends on the
// wire format sits behind this interface: which paths exist, what a request
// says (model, stream, session hints, capability config.Demands), how to rewrite it
// for a member, where the commit point of a stream is, and the error shapes.
// anthropicFlavour is the Anthropic Messages API; OpenAI Chat Completions and
// Responses implement the same interface next to it.
type flavour interface {
	// Name is config.APIAnthropic or config.APIOpenAI.
	Name() string
	// Endpoint maps method and the path after "/pool/{pool}" (e.g.
	// "/v1/messages") to an endpoint; false means 404.
	Endpoint(method, path string) (endpoint, bool)
	// ParseRequest reads the client's JSON body. An error is the client's
	// fault and is answered 400 in ErrorBody's shape.
	ParseRequest(ep endpoint, body []byte) (*callInfo, error)
	// RewriteBody returns the body for one member: model set to target and,
	// when effort is not "", the effort field set to it (SPEC POOL-2, POOL-12).
	RewriteBody(ci *callInfo, target, effort string) ([]byte, error)
	// NewWatcher returns the commit-point detector for one streamed attempt.
	NewWatcher() streamWatcher
	// InspectBody reads a non-streamed 2xx answer: its usage and, when it is
	// not a usable answer, the failure class and a message (SPEC POOL-7):
	// config.ClassEmpty for an answer of the API's success shape with no content,
	// config.ClassServer for a body that is not JSON of that shape (a captive
	// portal's HTML, a gateway's "{}") or that carries an "error" object.
	// class "" means usable.
	InspectBody(ep endpoint, body []byte) (u usage, class, msg string)
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

// endpointKind tells the call engine how to treat a request.
type endpointKind int

const (
	epGenerate    endpointKind = iota // a model call: failover, binding, commit point
	epCountTokens                     // passthrough with failover, no binding recorded
	epModels                          // answered by the pool from its configuration
)

// endpoint is one route of a flavour.
type endpoint struct {
	Kind endpointKind
	// Upstream is the path appended to the channel's base_url.
	Upstream string
	// fl, when set, is the flavour that handles this endpoint instead of the
	// pool's (an "openai" pool serves Chat Completions and Responses).
	fl flavour
}

// callInfo is what the pool reads from one request body.
type callInfo struct {
	Model  string
	Stream bool
	config.Demands
	// Session hints found in the body (SPEC POOL-5), in the order of that
	// rule: MetadataSession (Claude Code's metadata.user_id), PromptCacheKey
	// (Codex), ContentHash (system prompt + whole first user message).
	MetadataSession string
	PromptCacheKey  string
	ContentHash     string
	// previous is the Responses previous_response_id; encrypted: the input
	// carries encrypted reasoning (SPEC POOL-18, state.go).
	previous  string
	encrypted bool
	// budget: the effort was derived from Anthropic thinking.budget_tokens
	// (no output_config.effort), so a mapped effort rewrites the budget.
	budget bool

	raw []byte // the client's body
}

// usage is the prompt-cache accounting of one answer (POOL-NOTES "Why
// stickiness matters"): Input counts uncached input tokens, CacheRead the
// tokens served from the cache, CacheCreation the tokens written to it.
type usage struct {
	Input, CacheRead, CacheCreation, Output int64
}

// verdict is what an upstream event means for the commit point.
type verdict int

const (
	vPreamble verdict = iota // no visible output: hold it before the commit point
	vVisible                 // visible output: the commit point (SPEC POOL-7)
	vEnd                     // the protocol's clean end (message_stop, [DONE], response.completed)
	vError                   // the protocol's error event
)

// observation is a watcher's reading of one event.
type observation struct {
	Verdict verdict
	// For vError: the HTTP status equivalent to the error type, the type and
	// the upstream message.
	ErrStatus int
	ErrType   string
	ErrMsg    string
}

// streamWatcher follows one streamed attempt.
type streamWatcher interface {
	// Observe classifies ev. committed tells whether the commit point was
	// already passed (a watcher may then skip the visibility check).
	Observe(ev *sseEvent, committed bool) observation
	// Usage is the accumulated usage so far.
	Usage() usage
}

// errorEventer is implemented by watchers whose error event depends on the
// stream so far (Responses: sequence_number and response id); the engine
// prefers it to flavour.ErrorEvent after the commit point.
type errorEventer interface {
	ErrorEvent(status int, msg string) []byte
}

// stateWatcher is implemented by watchers of stateful APIs (Responses): the
// state keys the stream produced (POOL-18, state.go).
type stateWatcher interface {
	StateKeys() []string
}

// stateReader is implemented by flavours of stateful APIs: the state keys a
// complete answer carries (POOL-18).
type stateReader interface {
	StateKeys(body []byte) []string
}

// cleanEnder is implemented by watchers of protocols whose end event is
// optional in practice (Chat Completions "[DONE]"): EndedCleanly tells that
// an EOF now is a normal end, not a failure.
type cleanEnder interface {
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

var errBodyTooLarge = errors.New("request body too large")

// readBody reads at most limit bytes of r.
func readBody(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, errBodyTooLarge
	}
	return b, nil
}

// guardedKeys are the top-level request keys the pool reads and rewrites.
// encoding/json (ParseRequest) takes the last of several keys that match
// case-insensitively, while a member's server may take the first: two such
// keys would let the pool check one model id and send another, bypassing the
// pool's model list. checkTopLevel refuses them.
var guardedKeys = []string{"model", "stream", "thinking", "output_config", "reasoning_effort", "reasoning"}

// checkTopLevel refuses (with the 400 message) a request body whose top-level
// object holds more than one key equal to a guarded key under Unicode case
// folding (strings.EqualFold, the rule encoding/json matches field names
// by), a "model" that is not a string ("model must be a string") or a
// "stream" that is not a boolean ("stream must be a boolean"). A body that
// is not a JSON object passes; ParseRequest reports it.
func checkTopLevel(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	seen := make([]int, len(guardedKeys))
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil
		}
		k, _ := t.(string)
		for i, g := range guardedKeys {
			if strings.EqualFold(k, g) {
				if seen[i]++; seen[i] > 1 {
					return fmt.Errorf("%s: the request body has more than one %q key (keys are matched case-insensitively)", g, g)
				}
			}
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil
		}
		switch {
		case strings.EqualFold(k, "model") && (len(v) == 0 || v[0] != '"'):
			return errors.New("model must be a string")
		case strings.EqualFold(k, "stream") && string(v) != "true" && string(v) != "false" && string(v) != "null":
			return errors.New("stream must be a boolean")
		}
	}
	return nil
}

// spliceTopLevel replaces the value of key in the top-level JSON object body
// with val, leaving every other byte as the client sent it (so the upstream
// sees the same prompt bytes). The key is matched like encoding/json matches
// it (strings.EqualFold; checkTopLevel has refused duplicates). ok is false
// when body is not an object or has no such key.
func spliceTopLevel(body []byte, key string, val []byte) (out []byte, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, false
		}
		k, _ := t.(string)
		afterKey := dec.InputOffset()
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		end := dec.InputOffset()
		if !strings.EqualFold(k, key) {
			continue
		}
		start := int(afterKey)
		for start < int(end) && (body[start] == ':' || body[start] == ' ' || body[start] == '\t' || body[start] == '\n' || body[start] == '\r') {
			start++
		}
		out = make([]byte, 0, len(body)+len(val))
		out = append(out, body[:start]...)
		out = append(out, val...)
		return append(out, body[end:]...), true
	}
	return nil, false
}
