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

// refChannel is a Responses channel that, like OpenAI, holds conversations
// and stored items of its own account only: a conversation or an
// item_reference it does not hold is a 404.
type refChannel struct {
	who   string
	mu    sync.Mutex
	n     int
	calls int
	items map[string]bool
	convs map[string]bool
	fail  bool
}

func newRefChannel(who string, convs ...string) *refChannel {
	c := &refChannel{who: who, items: map[string]bool{}, convs: map[string]bool{}}
	for _, id := range convs {
		c.convs[id] = true
	}
	return c
}

func (c *refChannel) handle(w http.ResponseWriter, _ *http.Request, _ int, raw []byte) {
	var req struct {
		Conversation json.RawMessage `json:"conversation"`
		Input        []struct {
			Type string `json:"type"`
			ID   string `json:"id"`
		} `json:"input"`
	}
	_ = json.Unmarshal(raw, &req)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	w.Header().Set("Content-Type", "application/json")
	if c.fail {
		w.WriteHeader(500)
		io.WriteString(w, `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`)
		return
	}
	var conv string
	if len(req.Conversation) > 0 && json.Unmarshal(req.Conversation, &conv) != nil {
		var o struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(req.Conversation, &o)
		conv = o.ID
	}
	if conv != "" && !c.convs[conv] {
		w.WriteHeader(404)
		fmt.Fprintf(w, `{"error":{"message":"Conversation with id '%s' not found.","type":"invalid_request_error","param":"conversation","code":null}}`, conv)
		return
	}
	for _, it := range req.Input {
		if it.Type == "item_reference" && !c.items[it.ID] {
			w.WriteHeader(404)
			fmt.Fprintf(w, `{"error":{"message":"Item with id '%s' not found.","type":"invalid_request_error","param":"input","code":null}}`, it.ID)
			return
		}
	}
	c.n++
	item := fmt.Sprintf("msg_%s%d", c.who, c.n)
	c.items[item] = true
	convField := ""
	if conv != "" {
		convField = fmt.Sprintf(`,"conversation":{"id":%q}`, conv)
	}
	fmt.Fprintf(w, `{"id":"resp_%s%d","object":"response","status":"completed","model":"m"%s,"output":[{"type":"message","id":%q,"role":"assistant","content":[{"type":"output_text","text":"hi from %s"}]}],"usage":{"input_tokens":5,"output_tokens":3}}`,
		c.who, c.n, convField, item, c.who)
}

func (c *refChannel) count() int { c.mu.Lock(); defer c.mu.Unlock(); return c.calls }

// TestResponsesStoredState: a Responses call naming a conversation or
// stored items by item_reference goes to the member that holds them, as one
// with previous_response_id does (SPEC POOL-18).
func TestResponsesStoredState(t *testing.T) {
	call := func(t *testing.T, w *rworld, session, body string) (member string) {
		t.Helper()
		resp, out := w.do("/pool/p/v1/responses", session, body)
		if resp.StatusCode != 200 || !strings.Contains(out, "hi from") {
			t.Fatalf("%d %s", resp.StatusCode, out)
		}
		return resp.Header.Get("x-pool-member")
	}
	t.Run("POOL-18/conversation-follows-its-member", func(t *testing.T) {
		a, b := newRefChannel("a"), newRefChannel("b", "conv_1")
		w := newRWorld(t, rconf{api: config.APIOpenAI, poolExtra: "    strategy: failover\n"}, []string{"a", "b"}, a.handle, b.handle)
		for _, conv := range []string{`"conv_1"`, `{"id":"conv_1"}`, `"conv_1"`} {
			if m := call(t, w, "s1", `{"model":"m","conversation":`+conv+`,"input":"hi"}`); m != "b" {
				t.Fatalf("conversation %s served by %s", conv, m)
			}
		}
		// Only the first call, before the pool knew the owner, asked a.
		if n := a.count(); n != 1 {
			t.Fatalf("member a was asked %d times", n)
		}
		if m := w.member("a"); m.State != "ready" {
			t.Fatalf("a not holding the conversation was cooled: %+v", m)
		}
	})
	t.Run("POOL-18/item-reference-follows-its-member", func(t *testing.T) {
		a, b := newRefChannel("a"), newRefChannel("b")
		clk := newClock()
		w := newRWorld(t, rconf{api: config.APIOpenAI, poolExtra: "    strategy: failover\n", opts: pool.Options{Now: clk.now}},
			[]string{"a", "b"}, a.handle, b.handle)
		a.mu.Lock()
		a.fail = true
		a.mu.Unlock()
		if m := call(t, w, "s2", `{"model":"m","input":"hi"}`); m != "b" { // b stores msg_b1
			t.Fatalf("served by %s", m)
		}
		a.mu.Lock()
		a.fail = false
		a.mu.Unlock()
		clk.add(10 * time.Minute) // a's cooldown is over: failover order starts at a again
		asked := a.count()
		body := `{"model":"m","input":[{"type":"item_reference","id":"msg_b1"},{"type":"message","role":"user","content":"more"}]}`
		if m := call(t, w, "s3", body); m != "b" {
			t.Fatalf("item_reference to b's item served by %s", m)
		}
		if n := a.count() - asked; n != 0 {
			t.Fatalf("member a was asked %d times for b's item", n)
		}
		if m := call(t, w, "s4", `{"model":"m","input":"new"}`); m != "a" {
			t.Fatalf("a call without stored state served by %s, want a (failover order)", m)
		}
	})
}
