package pool_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/pool"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// respChannel is a Responses API channel that, like OpenAI, can only read
// the state it produced: a previous_response_id or an encrypted reasoning
// item from another account is a 400.
type respChannel struct {
	who  string
	mu   sync.Mutex
	n    int
	ids  map[string]bool
	encs map[string]bool
	fail bool
}

func newRespChannel(who string) *respChannel {
	return &respChannel{who: who, ids: map[string]bool{}, encs: map[string]bool{}}
}

func (c *respChannel) setFail(f bool) { c.mu.Lock(); c.fail = f; c.mu.Unlock() }

func (c *respChannel) handle(w http.ResponseWriter, r *http.Request, _ int, raw []byte) {
	var req struct {
		Stream   bool   `json:"stream"`
		Previous string `json:"previous_response_id"`
		Input    []struct {
			Type string `json:"type"`
			Enc  string `json:"encrypted_content"`
		} `json:"input"`
	}
	_ = json.Unmarshal(raw, &req)
	c.mu.Lock()
	defer c.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if c.fail {
		w.WriteHeader(500)
		io.WriteString(w, `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`)
		return
	}
	if req.Previous != "" && !c.ids[req.Previous] {
		w.WriteHeader(400)
		fmt.Fprintf(w, `{"error":{"message":"Previous response with id '%s' not found.","type":"invalid_request_error","param":"previous_response_id","code":"previous_response_not_found"}}`, req.Previous)
		return
	}
	for _, it := range req.Input {
		if it.Type == "reasoning" && it.Enc != "" && !c.encs[it.Enc] {
			w.WriteHeader(400)
			io.WriteString(w, `{"error":{"message":"The encrypted content for item rs_x could not be verified.","type":"invalid_request_error","param":null,"code":"invalid_encrypted_content"}}`)
			return
		}
	}
	c.n++
	id, enc := fmt.Sprintf("resp_%s%d", c.who, c.n), fmt.Sprintf("enc-%s-%d", c.who, c.n)
	c.ids[id], c.encs[enc] = true, true
	output := fmt.Sprintf(`[{"type":"reasoning","id":"rs_%s%d","summary":[],"encrypted_content":%q},{"type":"message","id":"m_%s%d","role":"assistant","content":[{"type":"output_text","text":"hi from %s"}]}]`,
		c.who, c.n, enc, c.who, c.n, c.who)
	resp := fmt.Sprintf(`{"id":%q,"object":"response","status":"completed","model":"m","output":%s,"usage":{"input_tokens":5,"output_tokens":3}}`, id, output)
	if !req.Stream {
		io.WriteString(w, resp)
		return
	}
	streamHead(w)
	ev(w, "response.created", fmt.Sprintf(`{"type":"response.created","sequence_number":0,"response":{"id":%q,"object":"response","status":"in_progress","output":[]}}`, id))
	ev(w, "response.output_item.done", fmt.Sprintf(`{"type":"response.output_item.done","sequence_number":1,"output_index":0,"item":{"type":"reasoning","id":"rs_%s%d","summary":[],"encrypted_content":%q}}`, c.who, c.n, enc))
	ev(w, "response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":2,"output_index":1,"content_index":0,"delta":"hi from `+c.who+`"}`)
	ev(w, "response.completed", fmt.Sprintf(`{"type":"response.completed","sequence_number":3,"response":%s}`, resp))
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }
func newClock() *clock               { return &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }
func encOf(s string) (string, bool)  { i := strings.Index(s, "enc-"); return s[i : i+7], i >= 0 }
func reasoningItem(enc string) string {
	return fmt.Sprintf(`{"type":"reasoning","summary":[],"encrypted_content":%q}`, enc)
}
func userItem(text string) string {
	return fmt.Sprintf(`{"type":"message","role":"user","content":[{"type":"input_text","text":%q}]}`, text)
}
func assistantItem(text string) string {
	return fmt.Sprintf(`{"type":"message","role":"assistant","content":[{"type":"output_text","text":%q}]}`, text)
}

// TestStatefulResponses: a Responses session failed over to another member
// and back never gets stuck on a 400 about state that member cannot read
// (SPEC POOL-18).
func TestStatefulResponses(t *testing.T) {
	t.Run("POOL-18/encrypted-reasoning-over-and-back", func(t *testing.T) {
		a, b := newRespChannel("a"), newRespChannel("b")
		clk := newClock()
		w := newRWorld(t, rconf{api: config.APIOpenAI, poolExtra: "    strategy: failover\n", opts: pool.Options{Now: clk.now}},
			[]string{"a", "b"}, a.handle, b.handle)
		var history []string
		turn := func(want string) {
			t.Helper()
			history = append(history, userItem(fmt.Sprintf("turn %d", len(history))))
			body := `{"model":"m","stream":true,"store":false,"include":["reasoning.encrypted_content"],"input":[` + strings.Join(history, ",") + `]}`
			resp, got := w.do("/pool/p/v1/responses", "codex-1", body)
			if resp.StatusCode != 200 || !strings.Contains(got, "hi from "+want) {
				t.Fatalf("turn %d: status %d, want an answer from %s: %s", len(history), resp.StatusCode, want, got)
			}
			enc, ok := encOf(got)
			if !ok {
				t.Fatalf("no encrypted reasoning in %s", got)
			}
			history = append(history, reasoningItem(enc), assistantItem("hi from "+want))
		}
		turn("a")
		turn("a")
		a.setFail(true)
		turn("b") // failover: a's reasoning must not make b answer 400
		turn("b")
		a.setFail(false)
		clk.add(time.Hour) // a's cooldown is over: failover order returns to a
		turn("a")          // b's reasoning must not make a answer 400
		turn("a")
	})
	t.Run("POOL-18/reasoning-of-unknown-origin-resent-without-it", func(t *testing.T) {
		// After a restart the pool does not know who produced an item: the
		// member rejects it once, and gets the call again without it.
		a := newRespChannel("a")
		w := newRWorld(t, rconf{api: config.APIOpenAI}, []string{"a"}, a.handle)
		body := `{"model":"m","stream":true,"store":false,"input":[` + userItem("t0") + "," + reasoningItem("enc-z-9") + "," + assistantItem("old") + "," + userItem("t1") + `]}`
		resp, got := w.do("/pool/p/v1/responses", "codex-2", body)
		if resp.StatusCode != 200 || !strings.Contains(got, "hi from a") {
			t.Fatalf("status %d: %s", resp.StatusCode, got)
		}
		if n := w.ch["a"].calls(); n != 2 || strings.Contains(string(w.ch["a"].req(1).Raw), "enc-z-9") || !strings.Contains(string(w.ch["a"].req(1).Raw), `"old"`) {
			t.Fatalf("calls %d, second body %s", n, w.ch["a"].req(1).Raw)
		}
		if m := w.member("a"); m.State != "ready" || m.Failures != 0 {
			t.Fatalf("a: %+v", m)
		}
	})
	t.Run("POOL-18/previous-response-id-returns-to-its-member", func(t *testing.T) {
		a, b := newRespChannel("a"), newRespChannel("b")
		clk := newClock()
		w := newRWorld(t, rconf{api: config.APIOpenAI, poolExtra: "    strategy: failover\n", opts: pool.Options{Now: clk.now}},
			[]string{"a", "b"}, a.handle, b.handle)
		ask := func(session, prev string) (int, string) {
			body := `{"model":"m","input":"hi"}`
			if prev != "" {
				body = `{"model":"m","input":"hi","previous_response_id":"` + prev + `"}`
			}
			resp, got := w.do("/pool/p/v1/responses", session, body)
			var r struct {
				ID string `json:"id"`
			}
			_ = json.Unmarshal([]byte(got), &r)
			if resp.StatusCode == 400 && strings.Contains(got, "previous_response_not_found") {
				t.Fatalf("stuck on a member that cannot read the state: %s", got)
			}
			return resp.StatusCode, r.ID
		}
		if st, id := ask("s1", ""); st != 200 || id != "resp_a1" {
			t.Fatalf("turn 1: %d %s", st, id)
		}
		a.setFail(true)
		// The state's member fails: the other member cannot continue this
		// response; the client gets a transient error, not b's 400.
		if st, _ := ask("s1", "resp_a1"); st < 500 {
			t.Fatalf("turn 2 while a fails: %d", st)
		}
		if m := w.member("b"); m.State != "ready" {
			t.Fatalf("b cooled down for a state it cannot read: %+v", m)
		}
		// Another conversation lands on b meanwhile.
		if st, id := ask("s2", ""); st != 200 || id != "resp_b1" {
			t.Fatalf("s2 turn 1: %d %s", st, id)
		}
		a.setFail(false)
		clk.add(time.Hour)
		if st, id := ask("s1", "resp_a1"); st != 200 || id != "resp_a2" {
			t.Fatalf("turn 2 after a recovered: %d %s", st, id)
		}
		// s2 continues b's response: it goes back to b, although the
		// failover order now starts at a.
		if st, id := ask("s2", "resp_b1"); st != 200 || id != "resp_b2" {
			t.Fatalf("s2 turn 2: %d %s", st, id)
		}
	})
}
