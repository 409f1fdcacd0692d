package mockllm

import (
	"fmt"
	"net/http"
	"strings"
)

// limitRefusal is the 400 a model call of api gets when the channel declares
// an output limit for its model (Channel.Limits) and the call asks for more,
// worded as each API words it (the pool must never cause one): Anthropic "max_tokens: 64000 >
// 8192, which is the maximum allowed number of output tokens for MODEL" (and
// "max_tokens: Field required" when it names none), OpenAI "max_tokens is
// too large", Gemini "maxOutputTokens … supported range". nil when the call
// is within its limit or its model declares none.
func (c *Channel) limitRefusal(api, path string, body map[string]any) *refusal {
	model := modelOf(api, path, body)
	limit, ok := c.Limits[model]
	if !ok {
		return nil
	}
	bad := func(msg string) *refusal {
		return &refusal{http.StatusBadRequest, errorDoc(api, http.StatusBadRequest, msg)}
	}
	switch api {
	case Anthropic:
		n, named := number(body["max_tokens"])
		switch {
		case !named:
			return bad("max_tokens: Field required")
		case n > limit:
			return bad(fmt.Sprintf("max_tokens: %d > %d, which is the maximum allowed number of output tokens for %s", n, limit, model))
		}
	case Chat, Responses:
		for _, f := range []string{"max_tokens", "max_completion_tokens", "max_output_tokens"} {
			if n, named := number(body[f]); named && n > limit {
				return &refusal{http.StatusBadRequest, map[string]any{"error": map[string]any{
					"message": fmt.Sprintf("%s is too large: %d. This model supports at most %d completion tokens, whereas you provided %d.", f, n, limit, n),
					"type":    "invalid_request_error", "param": f, "code": "invalid_value"}}}
			}
		}
	case Gemini:
		gc, _ := body["generationConfig"].(map[string]any)
		if n, named := number(gc["maxOutputTokens"]); named && n > limit {
			return bad(fmt.Sprintf("Unable to submit request because it has a maxOutputTokens value of %d but the supported range is from 1 (inclusive) to %d (exclusive). Update the value and try again.", n, limit+1))
		}
	}
	return nil
}

// modelOf is a model call's model: the body's "model", Gemini's from the
// path (/v1beta/models/{model}:generateContent).
func modelOf(api, path string, body map[string]any) string {
	if api == Gemini {
		if i := strings.Index(path, "/models/"); i >= 0 {
			m := path[i+len("/models/"):]
			if j := strings.IndexByte(m, ':'); j >= 0 {
				m = m[:j]
			}
			return m
		}
	}
	m, _ := body["model"].(string)
	return m
}

// number is a JSON number's value as an int, and whether v is one.
func number(v any) (int, bool) {
	f, ok := v.(float64)
	return int(f), ok
}
