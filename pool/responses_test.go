package pool

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/balance"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

const respPath = "/pool/p/v1/responses"

// seqs returns the sequence_number of every event, in order.
func seqs(t *testing.T, bl []block) []int {
	t.Helper()
	var out []int
	for _, b := range bl {
		var v struct {
			Seq *int `json:"sequence_number"`
		}
		if json.Unmarshal([]byte(b.data), &v) != nil || v.Seq == nil {
			t.Fatalf("event without sequence_number: %q", b.data)
		}
		out = append(out, *v.Seq)
	}
	return out
}

func names(bl []block) []string {
	var out []string
	for _, b := range bl {
		out = append(out, b.name)
	}
	return out
}

func TestResponsesFailover(t *testing.T) {
	hdr := map[string]string{"session-id": "codex-s"}
	for _, tc := range []struct {
		name string
		fail func(rw *respWriter)
		want string // class of a's failure
	}{
		{"POOL-7/responses-error-event-before-content-next-member", func(rw *respWriter) {
			rw.ev("error", map[string]any{"code": "server_error", "message": "The server had an error", "param": nil})
		}, config.ClassServer},
		{"POOL-7/responses-failed-before-content-next-member", func(rw *respWriter) {
			resp := rw.response("failed")
			resp["error"] = map[string]any{"code": "rate_limit_exceeded", "message": "slow down"}
			rw.ev("response.failed", map[string]any{"response": resp})
		}, config.ClassRateLimit},
		{"POOL-7/responses-completed-without-output-is-empty", func(rw *respWriter) {
			rw.ev("response.completed", map[string]any{"response": rw.response("completed")})
		}, config.ClassEmpty},
	} {
		t.Run(tc.name, func(t *testing.T) {
			failing := func(w http.ResponseWriter, r *http.Request, _ int) {
				sseHead(w)
				rw := &respWriter{w: w, who: "a"}
				rw.preamble()
				tc.fail(rw)
			}
			w := openaiWorld(t, []behaviour{failing, respOK("b")}, "", Options{})
			resp, body := w.callAPI(respPath, hdr, respBody("m", true, ""))
			bl := sseBlocks(body)
			ns := names(bl)
			if resp.StatusCode != 200 || count(ns, "response.created") != 1 || count(ns, "response.completed") != 1 ||
				count(ns, "error") != 0 || strings.Contains(body, "resp_a") || !strings.Contains(body, "resp_b") {
				t.Fatalf("status %d events %v", resp.StatusCode, ns)
			}
			for i, s := range seqs(t, bl) { // one coherent stream: b's numbering only
				if s != i {
					t.Fatalf("sequence numbers %v", seqs(t, bl))
				}
			}
			if resp.Header.Get("X-Pool-Member") != "b" || resp.Header.Get("X-Pool-Attempts") != "2" {
				t.Fatalf("headers %v", resp.Header)
			}
			if a := w.member("a"); a.CooldownClass != tc.want {
				t.Fatalf("a = %+v, want class %s", a, tc.want)
			}
		})
	}
	t.Run("POOL-7/responses-after-content-error-and-failed-no-splice", func(t *testing.T) {
		partial := func(w http.ResponseWriter, r *http.Request, _ int) {
			sseHead(w)
			rw := &respWriter{w: w, who: "a"}
			rw.preamble()
			rw.delta("half an ans")
		}
		w := openaiWorld(t, []behaviour{partial, respOK("b")}, "", Options{})
		resp, body := w.callAPI(respPath, hdr, respBody("m", true, ""))
		bl := sseBlocks(body)
		ns := names(bl)
		if resp.StatusCode != 200 || len(ns) != 7 || ns[5] != "error" || ns[6] != "response.failed" || count(ns, "response.completed") != 0 {
			t.Fatalf("events %v\n%s", ns, body)
		}
		for i, s := range seqs(t, bl) {
			if s != i {
				t.Fatalf("sequence numbers %v", seqs(t, bl))
			}
		}
		var failed struct {
			Response struct {
				ID, Status string
				Error      struct{ Code, Message string }
			}
		}
		if json.Unmarshal([]byte(bl[6].data), &failed) != nil || failed.Response.ID != "resp_a" || failed.Response.Status != "failed" || failed.Response.Error.Message == "" {
			t.Fatalf("response.failed %q", bl[6].data)
		}
		if w.mocks["b"].calls() != 0 {
			t.Fatal("b called after the commit point")
		}
	})
	t.Run("POOL-7/responses-upstream-error-after-content-gets-one-failed", func(t *testing.T) {
		partial := func(w http.ResponseWriter, r *http.Request, _ int) {
			sseHead(w)
			rw := &respWriter{w: w, who: "a"}
			rw.preamble()
			rw.delta("half")
			rw.ev("error", map[string]any{"code": "server_error", "message": "boom"})
		}
		w := openaiWorld(t, []behaviour{partial, respOK("b")}, "", Options{})
		_, body := w.callAPI(respPath, hdr, respBody("m", true, ""))
		ns := names(sseBlocks(body))
		if count(ns, "error") != 1 || ns[len(ns)-1] != "response.failed" || count(ns, "response.failed") != 1 {
			t.Fatalf("events %v", ns)
		}
	})
	t.Run("POOL-7/responses-function-call-item-commits", func(t *testing.T) {
		tool := func(w http.ResponseWriter, r *http.Request, _ int) {
			sseHead(w)
			rw := &respWriter{w: w, who: "a"}
			rw.ev("response.created", map[string]any{"response": rw.response("in_progress")})
			rw.ev("response.output_item.added", map[string]any{"output_index": 0, "item": map[string]any{"id": "fc_1", "type": "function_call", "name": "shell", "arguments": ""}})
		}
		w := openaiWorld(t, []behaviour{tool, respOK("b")}, "", Options{})
		_, body := w.callAPI(respPath, hdr, respBody("m", true, ""))
		ns := names(sseBlocks(body))
		if len(ns) != 4 || ns[1] != "response.output_item.added" || ns[2] != "error" || w.mocks["b"].calls() != 0 {
			t.Fatalf("events %v", ns)
		}
	})
	t.Run("POOL-11/responses-all-failed-one-error-listing-attempts", func(t *testing.T) {
		w := openaiWorld(t, []behaviour{
			statusAnswer(503, nil, `{"error":{"message":"unavailable","type":"server_error"}}`),
			statusAnswer(401, nil, `{"error":{"message":"bad key","type":"invalid_request_error","code":"invalid_api_key"}}`),
		}, "", Options{})
		resp, body := w.callAPI(respPath, hdr, respBody("m", true, ""))
		var doc struct {
			Error struct {
				Message, Type, Code string
				Attempts            []neutral.Attempt
			} `json:"error"`
		}
		if resp.StatusCode != 503 || json.Unmarshal([]byte(body), &doc) != nil || len(doc.Error.Attempts) != 2 ||
			doc.Error.Attempts[1].Class != config.ClassAuth || doc.Error.Type != "server_error" {
			t.Fatalf("%d %q", resp.StatusCode, body)
		}
	})
	t.Run("POOL-7/responses-non-streaming-fails-over", func(t *testing.T) {
		w := openaiWorld(t, []behaviour{statusAnswer(502, nil, `{}`), respOK("b")}, "", Options{})
		resp, body := w.callAPI(respPath, hdr, respBody("m", false, ""))
		if resp.StatusCode != 200 || !strings.Contains(body, "hi from b") || resp.Header.Get("X-Pool-Attempts") != "2" {
			t.Fatalf("%d %q", resp.StatusCode, body)
		}
	})
}

func TestResponsesCodexRequest(t *testing.T) {
	t.Run("POOL-5/codex-sample-session-id-sticky-and-cache-ratio", func(t *testing.T) {
		// Headers as Codex CLI 0.171 sends them.
		const sid = "01a228fe-dbbe-7401-b2b0-410e82312433"
		hdr := map[string]string{"session-id": sid, "thread-id": sid, "x-client-request-id": sid,
			"originator": "codex_exec", "accept": "text/event-stream",
			"user-agent": "codex_exec/0.171.0 (Debian 12.0.0; x86_64) xterm-256color (codex_exec; 0.171.0)"}
		w := openaiWorld(t, []behaviour{respOK("a"), respOK("b")}, "", Options{})
		w.callAPI(respPath, map[string]string{"X-Session-Id": "other"}, respBody("m", true, ""))
		body := respBody("m", true, `"prompt_cache_key": "`+sid+`", "store": false, "include": ["reasoning.encrypted_content"], "reasoning": {"summary": "auto"}, `)
		var member string
		for i := 0; i < 3; i++ {
			resp, _ := w.callAPI(respPath, hdr, body)
			if resp.Header.Get("X-Pool-Session") != balance.SessionHash(sid) {
				t.Fatalf("session %q", resp.Header.Get("X-Pool-Session"))
			}
			if i == 0 {
				member = resp.Header.Get("X-Pool-Member")
			} else if resp.Header.Get("X-Pool-Member") != member {
				t.Fatal("codex session moved")
			}
		}
		got := w.mocks[member].req(w.mocks[member].calls() - 1)
		if got.Path != "/v1/responses" || got.Header.Get("Originator") != "codex_exec" || got.Body["prompt_cache_key"] != sid {
			t.Fatalf("upstream saw %s %v", got.Path, got.Header)
		}
		if c := w.member(member).Cache; c.HitRatio != 0.8 {
			t.Fatalf("cache %+v", c)
		}
	})
}
