package mockllm

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// anUsage posts a Messages body to srv and returns the answer's usage
// (status 200), or the status and error message.
func anUsage(t *testing.T, srv *httptest.Server, body string) (u map[string]float64, status int, msg string) {
	t.Helper()
	st, b := send(t, http.MethodPost, srv.URL+"/v1/messages", body, nil)
	var doc struct {
		Usage map[string]float64 `json:"usage"`
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(b), &doc); err != nil {
		t.Fatalf("%d %s", st, b)
	}
	return doc.Usage, st, doc.Error.Message
}

// conversation is a Messages body of a system prompt and turns user texts
// (answered by "ok" in between), each text about 100 tokens, with
// cache_control on the system prompt and on the blocks named by mark
// (message indexes).
func conversation(turns int, mark ...int) string {
	marked := map[int]bool{}
	for _, m := range mark {
		marked[m] = true
	}
	cc := func(i int) string {
		if marked[i] {
			return `,"cache_control":{"type":"ephemeral"}`
		}
		return ""
	}
	var msgs []string
	for i := range 2*turns - 1 {
		role, text := "user", fmt.Sprintf("question %d %s", i, strings.Repeat("x", 400))
		if i%2 == 1 {
			role, text = "assistant", "ok"
		}
		msgs = append(msgs, fmt.Sprintf(`{"role":%q,"content":[{"type":"text","text":%q%s}]}`, role, text, cc(i)))
	}
	return `{"model":"claude","max_tokens":100,"system":[{"type":"text","text":"` + strings.Repeat("s", 4000) +
		`","cache_control":{"type":"ephemeral"}}],"messages":[` + strings.Join(msgs, ",") + `]}`
}

func TestPromptCache(t *testing.T) {
	t.Run("POOL-24/mock-cache-reads-the-repeated-prefix-up-to-a-breakpoint", func(t *testing.T) {
		srv := httptest.NewServer(&Channel{API: Anthropic, Cache: &PromptCache{}})
		defer srv.Close()
		u1, st, msg := anUsage(t, srv, conversation(1, 0))
		if st != 200 || u1["cache_read_input_tokens"] != 0 || u1["cache_creation_input_tokens"] < 1000 || u1["input_tokens"] != 0 {
			t.Fatalf("turn 1: %d %q %v", st, msg, u1)
		}
		u2, _, _ := anUsage(t, srv, conversation(2, 2))
		if u2["cache_read_input_tokens"] != u1["cache_creation_input_tokens"] || u2["cache_creation_input_tokens"] < 100 || u2["input_tokens"] != 0 {
			t.Fatalf("turn 2 reads turn 1's prefix: turn 1 %v, turn 2 %v", u1, u2)
		}
		u3, _, _ := anUsage(t, srv, conversation(3, 2, 4))
		if u3["cache_read_input_tokens"] != u2["cache_read_input_tokens"]+u2["cache_creation_input_tokens"] {
			t.Fatalf("turn 3 reads turn 2's prefix: turn 2 %v, turn 3 %v", u2, u3)
		}
	})
	t.Run("POOL-24/mock-cache-reads-nothing-without-a-breakpoint", func(t *testing.T) {
		srv := httptest.NewServer(&Channel{API: Anthropic, Cache: &PromptCache{}})
		defer srv.Close()
		plain := strings.Replace(conversation(2), `,"cache_control":{"type":"ephemeral"}`, "", 1)
		for turn := range 2 {
			if u, _, _ := anUsage(t, srv, plain); u["cache_read_input_tokens"] != 0 || u["cache_creation_input_tokens"] != 0 || u["input_tokens"] < 1000 {
				t.Fatalf("call %d without breakpoints: %v", turn+1, u)
			}
		}
	})
	// systemTokens is what the system prompt of conversation costs.
	systemTokens := func(t *testing.T) float64 {
		srv := httptest.NewServer(&Channel{API: Anthropic, Cache: &PromptCache{}})
		defer srv.Close()
		u, _, _ := anUsage(t, srv, conversation(1))
		return u["cache_creation_input_tokens"]
	}
	t.Run("POOL-24/mock-cache-misses-a-changed-prefix", func(t *testing.T) {
		srv := httptest.NewServer(&Channel{API: Anthropic, Cache: &PromptCache{}})
		defer srv.Close()
		anUsage(t, srv, conversation(1, 0))
		changed := strings.Replace(conversation(2, 2), "question 0", "question 9", 1)
		if u, _, _ := anUsage(t, srv, changed); u["cache_read_input_tokens"] != systemTokens(t) { // the system prompt only
			t.Fatalf("a changed first message reads past it: %v", u)
		}
	})
	t.Run("POOL-24/mock-cache-looks-back-20-blocks", func(t *testing.T) {
		srv := httptest.NewServer(&Channel{API: Anthropic, Cache: &PromptCache{}})
		defer srv.Close()
		anUsage(t, srv, conversation(1, 0))
		if u, _, _ := anUsage(t, srv, conversation(12, 22)); u["cache_read_input_tokens"] != systemTokens(t) {
			t.Fatalf("a breakpoint 22 blocks on reads the system prompt only: %v", u)
		}
		if u, _, _ := anUsage(t, srv, conversation(12, 0, 22)); u["cache_read_input_tokens"] <= systemTokens(t) {
			t.Fatalf("with the previous breakpoint kept it reads the first turn too: %v", u)
		}
	})
	t.Run("POOL-24/mock-cache-skips-a-short-prefix", func(t *testing.T) {
		srv := httptest.NewServer(&Channel{API: Anthropic, Cache: &PromptCache{MinTokens: 1024}})
		defer srv.Close()
		short := `{"model":"claude","max_tokens":10,"system":[{"type":"text","text":"brief","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"hi"}]}`
		for range 2 {
			if u, _, _ := anUsage(t, srv, short); u["cache_read_input_tokens"] != 0 || u["cache_creation_input_tokens"] != 0 {
				t.Fatalf("a prefix under MinTokens is cached: %v", u)
			}
		}
	})
	t.Run("POOL-24/mock-refuses-breakpoints-anthropic-refuses", func(t *testing.T) {
		srv := httptest.NewServer(&Channel{API: Anthropic, Cache: &PromptCache{}})
		defer srv.Close()
		if _, st, msg := anUsage(t, srv, conversation(3, 0, 1, 2, 4)); st != 400 || !strings.Contains(msg, "A maximum of 4 blocks with cache_control") {
			t.Fatalf("five breakpoints: %d %q", st, msg)
		}
		thinking := `{"model":"claude","max_tokens":10,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s","cache_control":{"type":"ephemeral"}}]}]}`
		if _, st, msg := anUsage(t, srv, thinking); st != 400 || !strings.Contains(msg, "thinking blocks") {
			t.Fatalf("a breakpoint on thinking: %d %q", st, msg)
		}
	})
}

func TestDeclaredLimits(t *testing.T) {
	for _, tc := range []struct {
		api, body, want string
	}{
		{Anthropic, `{"model":"small","max_tokens":32000,"messages":[]}`, "max_tokens: 32000 > 8192, which is the maximum allowed number of output tokens for small"},
		{Anthropic, `{"model":"small","messages":[]}`, "max_tokens: Field required"},
		{Chat, `{"model":"small","max_tokens":9000,"messages":[]}`, "max_tokens is too large: 9000"},
		{Chat, `{"model":"small","max_completion_tokens":9000,"messages":[]}`, "max_completion_tokens is too large: 9000"},
		{Responses, `{"model":"small","max_output_tokens":9000,"input":"hi"}`, "max_output_tokens is too large: 9000"},
		{Gemini, `{"contents":[],"generationConfig":{"maxOutputTokens":9000}}`, "maxOutputTokens value of 9000"},
	} {
		t.Run("POOL-25/mock-refuses-a-limit-above-the-declared-"+tc.api, func(t *testing.T) {
			srv := httptest.NewServer(&Channel{API: tc.api, Limits: map[string]int{"small": 8192}})
			defer srv.Close()
			path := strings.Replace(paths[tc.api], "/m:", "/small:", 1)
			st, b := send(t, http.MethodPost, srv.URL+path, tc.body, nil)
			if st != 400 || !strings.Contains(strings.ReplaceAll(b, `\u003e`, ">"), tc.want) {
				t.Fatalf("%d %s", st, b)
			}
			within := strings.NewReplacer("32000", "8192", "9000", "8192", `"messages":[]}`, `"messages":[],"max_tokens":100}`).Replace(tc.body)
			if tc.want == "max_tokens: Field required" {
				within = `{"model":"small","max_tokens":8192,"messages":[]}`
			}
			if st, b := send(t, http.MethodPost, srv.URL+path, within, nil); st != 200 {
				t.Fatalf("within the limit: %d %s", st, b)
			}
			other := strings.NewReplacer(`"small"`, `"big"`, "/small:", "/big:").Replace(tc.body)
			if st, b := send(t, http.MethodPost, srv.URL+strings.Replace(path, "/small:", "/big:", 1), other, nil); st != 200 {
				t.Fatalf("a model without a declared limit: %d %s", st, b)
			}
		})
	}
}
