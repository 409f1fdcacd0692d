package pool

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/config"
)

// capsWorld: a is text-only with efforts low..high and max_tokens 32768
// (effort_map maps xhigh → high for it), b takes images, efforts up to
// xhigh, max_tokens 65536; c declares only [low].
func capsWorld(t *testing.T, api string, ok func(string) behaviour) *world {
	return newWorldAPI(t, api, []string{"a", "b", "c"}, []behaviour{ok("a"), ok("b"), ok("c")}, map[string]string{
		"a": "models: [{id: ta, context_window: 131072, max_tokens: 32768, input: [text], efforts: [low, medium, high]}]",
		"b": "models: [{id: tb, context_window: 262144, max_tokens: 65536, input: [text, image], efforts: [low, medium, high, xhigh, max]}]",
		"c": "models: [{id: tc, context_window: 200000, max_tokens: 65536, input: [text], efforts: [low]}]",
	}, `    strategy: failover
    models:
      - id: m
        targets: {a: ta, b: tb, c: tc}
        effort_map: {a: {xhigh: high, max: high}, c: {medium: low, high: low, xhigh: low, max: low}}
`, Options{})
}

func TestCapabilityFilter(t *testing.T) {
	t.Run("POOL-12/image-never-reaches-text-only-member", func(t *testing.T) {
		for _, tc := range []struct {
			api, path, body string
			ok              func(string) behaviour
		}{
			{config.APIOpenAI, chatPath, `{"model":"m","stream":true,"messages":[{"role":"user","content":[{"type":"text","text":"what is this"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}]}`, chatOK},
			{config.APIOpenAI, respPath, `{"model":"m","stream":true,"input":[{"role":"user","content":[{"type":"input_text","text":"what"},{"type":"input_image","image_url":"data:image/png;base64,AAAA"}]}]}`, respOK},
			{config.APIOpenAI, respPath, `{"model":"m","stream":false,"input":[{"type":"function_call_output","call_id":"c1","output":[{"type":"input_image","image_url":"data:image/png;base64,AAAA"}]}]}`, respOK},
			{config.APIAnthropic, "/pool/p/v1/messages", `{"model":"m","max_tokens":100,"stream":true,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]}]}`, okAnswer},
		} {
			w := capsWorld(t, tc.api, tc.ok)
			for i := 0; i < 3; i++ { // failover strategy: a would be first for anything
				resp, body := w.callAPI(tc.path, map[string]string{"X-Session-Id": fmt.Sprint("img-", i)}, tc.body)
				if resp.StatusCode != 200 || resp.Header.Get("X-Pool-Member") != "b" {
					t.Fatalf("%s: %d member %q %q", tc.path, resp.StatusCode, resp.Header.Get("X-Pool-Member"), body)
				}
			}
			if w.mocks["a"].calls()+w.mocks["c"].calls() != 0 {
				t.Fatalf("%s: a text-only member got an image request", tc.path)
			}
			// Without the image, a (first in order) serves.
			text := strings.NewReplacer(`"image_url"`, `"text"`, `"input_image"`, `"input_text"`, `"type":"image"`, `"type":"text","text":"x"`).Replace(tc.body)
			if resp, _ := w.callAPI(tc.path, nil, text); resp.Header.Get("X-Pool-Member") != "a" {
				t.Fatalf("%s: text request went to %q", tc.path, resp.Header.Get("X-Pool-Member"))
			}
		}
	})
	t.Run("POOL-12/effort-mapped-per-member-or-member-skipped", func(t *testing.T) {
		for _, tc := range []struct {
			name, api, path, body string
			ok                    func(string) behaviour
			effort                func(map[string]any) any
		}{
			{"chat", config.APIOpenAI, chatPath, `{"model":"m","stream":true,"reasoning_effort":"%s","messages":[{"role":"user","content":"hi"}]}`, chatOK,
				func(b map[string]any) any { return b["reasoning_effort"] }},
			{"responses", config.APIOpenAI, respPath, `{"model":"m","stream":true,"reasoning":{"effort":"%s","summary":"auto"},"input":"hi"}`, respOK,
				func(b map[string]any) any { r, _ := b["reasoning"].(map[string]any); return r["effort"] }},
			{"anthropic-output-config", config.APIAnthropic, "/pool/p/v1/messages", `{"model":"m","max_tokens":100,"stream":true,"thinking":{"type":"adaptive"},"output_config":{"effort":"%s"},"messages":[{"role":"user","content":"hi"}]}`, okAnswer,
				func(b map[string]any) any { r, _ := b["output_config"].(map[string]any); return r["effort"] }},
		} {
			w := capsWorld(t, tc.api, tc.ok)
			// xhigh: a maps it to high (first in order, serves).
			resp, _ := w.callAPI(tc.path, nil, fmt.Sprintf(tc.body, "xhigh"))
			if m := resp.Header.Get("X-Pool-Member"); m != "a" {
				t.Fatalf("%s: xhigh went to %q", tc.name, m)
			}
			if got := tc.effort(w.mocks["a"].req(0).Body); got != "high" {
				t.Fatalf("%s: a received effort %v, want high", tc.name, got)
			}
			// a fails: b gets xhigh unchanged; c (maps xhigh→low) is next after b.
			w.mocks["a"].set(statusAnswer(500, nil, `{}`))
			resp, _ = w.callAPI(tc.path, nil, fmt.Sprintf(tc.body, "xhigh"))
			if m := resp.Header.Get("X-Pool-Member"); m != "b" || tc.effort(w.mocks["b"].req(0).Body) != "xhigh" {
				t.Fatalf("%s: member %q effort %v", tc.name, m, tc.effort(w.mocks["b"].req(0).Body))
			}
			// minimal: nobody declares it and nobody maps it → 400 naming why, no upstream call.
			before := w.mocks["b"].calls() + w.mocks["c"].calls()
			resp, body := w.callAPI(tc.path, nil, fmt.Sprintf(tc.body, "minimal"))
			if resp.StatusCode != 400 || !strings.Contains(body, `effort \"minimal\" not supported`) || w.mocks["b"].calls()+w.mocks["c"].calls() != before {
				t.Fatalf("%s: minimal → %d %q", tc.name, resp.StatusCode, body)
			}
		}
	})
	t.Run("POOL-12/anthropic-thinking-budget-mapped", func(t *testing.T) {
		// a lacks max (maps it to high), b has max, c has only low (maps
		// everything to low, or off → thinking disabled).
		w := newWorldAPI(t, config.APIAnthropic, []string{"a", "b", "c"}, []behaviour{okAnswer("a"), okAnswer("b"), okAnswer("c")}, map[string]string{
			"a": "models: [{id: m, max_tokens: 64000, efforts: [low, medium, high]}]",
			"b": "models: [{id: m, max_tokens: 64000, efforts: [low, medium, high, max]}]",
			"c": "models: [{id: m, max_tokens: 64000, efforts: [low, none]}]",
		}, "    strategy: failover\n    models: [{id: m, effort_map: {a: {max: high}, c: {max: none}}}]\n", Options{})
		body := `{"model":"m","max_tokens":64000,"stream":true,"thinking":{"type":"enabled","budget_tokens":60000},"messages":[{"role":"user","content":"hi"}]}`
		resp, _ := w.callAPI("/pool/p/v1/messages", nil, body) // 60000 → max; a maps max → high
		th, _ := w.mocks["a"].req(0).Body["thinking"].(map[string]any)
		if resp.Header.Get("X-Pool-Member") != "a" || th["type"] != "enabled" || th["budget_tokens"] != float64(32768) {
			t.Fatalf("member %q thinking %v", resp.Header.Get("X-Pool-Member"), th)
		}
		w.mocks["a"].set(statusAnswer(500, nil, `{}`))
		w.callAPI("/pool/p/v1/messages", nil, body) // b declares max: budget unchanged
		if th, _ := w.mocks["b"].req(0).Body["thinking"].(map[string]any); th["budget_tokens"] != float64(60000) {
			t.Fatalf("b thinking %v", th)
		}
		w.mocks["b"].set(statusAnswer(500, nil, `{}`))
		w.callAPI("/pool/p/v1/messages", nil, body) // c maps max → none: thinking disabled
		if th, _ := w.mocks["c"].req(0).Body["thinking"].(map[string]any); th["type"] != "disabled" {
			t.Fatalf("c thinking %v", th)
		}
	})
	t.Run("POOL-25/max-tokens-above-member-limit-lowered-not-skipped", func(t *testing.T) {
		// a declares 32768: it serves (failover order), sent its own limit
		// in the field the client used; the session is not moved for it.
		for _, tc := range []struct {
			api, path, body, field string
			ok                     func(string) behaviour
		}{
			{config.APIOpenAI, chatPath, `{"model":"m","stream":true,"max_completion_tokens":50000,"messages":[{"role":"user","content":"hi"}]}`, "max_completion_tokens", chatOK},
			{config.APIOpenAI, chatPath, `{"model":"m","stream":true,"max_tokens":50000,"messages":[{"role":"user","content":"hi"}]}`, "max_tokens", chatOK},
			{config.APIOpenAI, respPath, `{"model":"m","stream":true,"max_output_tokens":50000,"input":"hi"}`, "max_output_tokens", respOK},
			{config.APIAnthropic, "/pool/p/v1/messages", `{"model":"m","max_tokens":50000,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, "max_tokens", okAnswer},
		} {
			w := capsWorld(t, tc.api, tc.ok)
			resp, body := w.callAPI(tc.path, nil, tc.body)
			if resp.StatusCode != 200 || resp.Header.Get("X-Pool-Member") != "a" || w.mocks["a"].req(0).Body[tc.field] != float64(32768) {
				t.Fatalf("%s %s: %d member %q %q", tc.path, tc.body, resp.StatusCode, resp.Header.Get("X-Pool-Member"), body)
			}
		}
	})
}

func TestOpenAIModels(t *testing.T) {
	t.Run("POOL-12/openai-models-list-merged-limits", func(t *testing.T) {
		w := capsWorld(t, config.APIOpenAI, chatOK)
		req, _ := http.NewRequest(http.MethodGet, w.srv.URL+"/pool/p/v1/models", nil)
		resp, err := w.tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var doc struct {
			Object string `json:"object"`
			Data   []struct {
				config.ModelInfo
				Obj     string `json:"object"`
				Owned   string `json:"owned_by"`
				Created *int64 `json:"created"`
			} `json:"data"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
			t.Fatal(err)
		}
		if doc.Object != "list" || len(doc.Data) != 1 {
			t.Fatalf("doc %+v", doc)
		}
		m := doc.Data[0]
		// min context/max tokens, union of input, efforts everyone serves
		// after effort_map (c maps everything above low to low).
		if m.ModelInfo.ID != "m" || m.Obj != "model" || m.Owned != "p" || m.Created == nil || m.ContextWindow != 131072 || m.MaxTokens != 32768 ||
			strings.Join(m.Input, ",") != "text,image" || strings.Join(m.Efforts, ",") != "low,medium,high,xhigh,max" {
			t.Fatalf("model %+v", m)
		}
	})
}
