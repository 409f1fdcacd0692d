package api

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/api/anthropic"
	"github.com/dual-proxy/dual-proxy/pool/api/chat"
	"github.com/dual-proxy/dual-proxy/pool/api/gemini"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/responses"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

func TestRewriteKeepsBytes(t *testing.T) {
	body := `{"system":"x <b>&", "model" : "flash", "output_config":{"effort":"max"},"stream":true}`
	ci, err := anthropic.Flavour{}.ParseRequest(neutral.Endpoint{Kind: neutral.EpGenerate}, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("POOL-2/model-spliced", func(t *testing.T) {
		out, err := anthropic.Flavour{}.RewriteBody(ci, "deepseek-v4.1-flash", "")
		if err != nil || string(out) != `{"system":"x <b>&", "model" : "deepseek-v4.1-flash", "output_config":{"effort":"max"},"stream":true}` {
			t.Fatalf("%s %v", out, err)
		}
	})
	t.Run("POOL-12/effort-mapped", func(t *testing.T) {
		out, err := anthropic.Flavour{}.RewriteBody(ci, "t", "high")
		var v struct {
			OutputConfig struct{ Effort string } `json:"output_config"`
			Model        string
		}
		if err != nil || json.Unmarshal(out, &v) != nil || v.OutputConfig.Effort != "high" || v.Model != "t" {
			t.Fatalf("%s %v", out, err)
		}
	})
}

func TestWatcherCommitPoint(t *testing.T) {
	for _, tc := range []struct {
		name, ev, data string
		want           neutral.Verdict
	}{
		{"POOL-7/message-start-is-preamble", "message_start", `{"type":"message_start","message":{"usage":{"input_tokens":3}}}`, neutral.VPreamble},
		{"POOL-7/empty-text-block-is-preamble", "content_block_start", `{"type":"content_block_start","content_block":{"type":"text","text":""}}`, neutral.VPreamble},
		{"POOL-7/tool-use-start-is-visible", "content_block_start", `{"type":"content_block_start","content_block":{"type":"tool_use","id":"t","name":"x","input":{}}}`, neutral.VVisible},
		{"POOL-7/text-delta-visible", "content_block_delta", `{"type":"content_block_delta","delta":{"type":"text_delta","text":"h"}}`, neutral.VVisible},
		{"POOL-7/empty-text-delta-preamble", "content_block_delta", `{"type":"content_block_delta","delta":{"type":"text_delta","text":""}}`, neutral.VPreamble},
		{"POOL-7/thinking-delta-visible", "content_block_delta", `{"type":"content_block_delta","delta":{"type":"thinking_delta","thinking":"hm"}}`, neutral.VVisible},
		{"POOL-7/json-delta-visible", "content_block_delta", `{"type":"content_block_delta","delta":{"type":"input_json_delta","partial_json":"{\""}}`, neutral.VVisible},
		{"POOL-7/signature-delta-preamble", "content_block_delta", `{"type":"content_block_delta","delta":{"type":"signature_delta","signature":"abc"}}`, neutral.VPreamble},
		{"POOL-7/ping-preamble", "ping", `{"type":"ping"}`, neutral.VPreamble},
		{"POOL-7/error-event", "error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, neutral.VError},
		{"POOL-7/stop", "message_stop", `{"type":"message_stop"}`, neutral.VEnd},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := anthropic.Flavour{}.NewWatcher()
			if got := w.Observe(&wirefmt.SSEEvent{Name: tc.ev, Data: []byte(tc.data)}, false); got.Verdict != tc.want {
				t.Fatalf("got %v want %v", got.Verdict, tc.want)
			}
		})
	}
}

func TestSSEReader(t *testing.T) {
	in := "event: a\ndata: {\"x\":1}\n\n: keepalive\n\nevent: b\r\ndata: l1\r\ndata: l2\r\n\r\n\nevent: c\ndata: tail"
	rd := wirefmt.NewSSEReader(strings.NewReader(in))
	var got []wirefmt.SSEEvent
	var err error
	for {
		var ev wirefmt.SSEEvent
		if ev, err = rd.Next(); err != nil {
			break
		}
		got = append(got, ev)
	}
	// POOL-19: the event pending at EOF (no blank line) is dispatched.
	if err != io.EOF || len(got) != 4 || got[3].Name != "c" || string(got[3].Data) != "tail" || string(got[3].Raw) != "event: c\ndata: tail\n\n" {
		t.Fatalf("%v %+v", err, got)
	}
	if got[0].Name != "a" || string(got[0].Data) != `{"x":1}` || !got[1].Comment || got[2].Name != "b" || string(got[2].Data) != "l1\nl2" {
		t.Fatalf("%+v", got)
	}
	if string(got[2].Raw) != "event: b\r\ndata: l1\r\ndata: l2\r\n\r\n" {
		t.Fatalf("raw %q", got[2].Raw)
	}
}

// FuzzSSEReader: never panics; re-reading the concatenated Raw bytes of the
// events yields the same events (forwarding Raw is lossless).
func FuzzSSEReader(f *testing.F) {
	for _, s := range []string{"event: a\ndata: x\n\n", "data: a\r\rdata: b\r\n\r\n", "data: [DONE]", "event: e\r\ndata: x\r\n", ": c\n\n", "data: 1\r\n\r\n", "\n\n\nevent: e", "data:\n\n", "event:x\ndata:y\nid: 3\nretry: 5\n\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		read := func(b []byte) ([]wirefmt.SSEEvent, []byte) {
			rd := wirefmt.NewSSEReader(bytes.NewReader(b))
			var evs []wirefmt.SSEEvent
			var raw []byte
			for i := 0; i < 1<<16; i++ {
				ev, err := rd.Next()
				if err != nil {
					break
				}
				evs = append(evs, ev)
				raw = append(raw, ev.Raw...)
			}
			return evs, raw
		}
		evs, raw := read(in)
		again, raw2 := read(raw)
		if len(evs) != len(again) || !bytes.Equal(raw, raw2) {
			t.Fatalf("not stable: %d vs %d events", len(evs), len(again))
		}
		for i := range evs {
			if evs[i].Name != again[i].Name || !bytes.Equal(evs[i].Data, again[i].Data) || evs[i].Comment != again[i].Comment {
				t.Fatalf("event %d differs", i)
			}
		}
	})
}

// FuzzSplice: the splice either refuses or yields valid JSON whose "model"
// is the new value and whose other keys are unchanged.
func FuzzSplice(f *testing.F) {
	for _, s := range []string{`{"model":"a","x":1}`, `{ "x" : [1,{"model":2}], "model" :"b" }`, `{}`, `[]`, `{"model":`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, ok := wirefmt.SpliceTopLevel(in, "model", []byte(`"NEW"`))
		if !ok {
			return
		}
		var before, after map[string]json.RawMessage
		if json.Unmarshal(in, &before) != nil {
			return // duplicate keys or trailing junk: only validity of out matters less
		}
		if err := json.Unmarshal(out, &after); err != nil {
			t.Fatalf("invalid JSON after splice: %q", out)
		}
		if _, had := before["model"]; !had {
			return
		}
		for k := range before {
			if k != "model" && !bytes.Equal(before[k], after[k]) && bytes.Count(in, []byte(`"model"`)) == 1 {
				t.Fatalf("key %q changed", k)
			}
		}
	})
}

// TestContentHashPinned: the lazily computed content hash of a bare
// request is the hash the pool has always computed for it (pinned values), so a
// session keeps its member when the pool is upgraded;
// SessionContentHash is stable when called twice and "" after Release.
func TestContentHashPinned(t *testing.T) {
	t.Run("POOL-5/content-hash-unchanged-by-lazy-hash", func(t *testing.T) {
		for i, g := range []struct {
			fl         Flavour
			ep         neutral.Endpoint
			body, want string
		}{
			{anthropic.Flavour{}, neutral.Endpoint{Kind: neutral.EpGenerate}, `{"model":"m","system":"s <&> \u2028","messages":[{"role":"assistant","content":"a"},{"role":"user","content":[{"type":"text","text":"hi"}]},{"role":"user","content":"2"}]}`, "3846e1a6cdda523ef82619e885db949064dd2a9d09eb71bb8105e5148de8a712"},
			{anthropic.Flavour{}, neutral.Endpoint{Kind: neutral.EpGenerate}, `{"model":"m","system":[{"type":"text","text":"s1"},{"type":"text","text":"s2"}],"messages":[{"role":"user","content":"hi"}]}`, "06d60c5b1b8c0e0cb46aa43f8225d5fba1be3600f9bc095a90119bfeca766b8c"},
			{anthropic.Flavour{}, neutral.Endpoint{Kind: neutral.EpGenerate}, `{"model":"m","messages":[{"role":"user","content":"only user"}]}`, "db186c14fd05ff0bcba1ec97fe21f9ac2ece7a1458d61f4b63060d4916956180"},
			{chat.Flavour{}, neutral.Endpoint{Kind: neutral.EpGenerate}, `{"model":"m","messages":[{"role":"system","content":"s"},{"role":"developer","content":[{"type":"text","text":"d <b>"}]},{"role":"user","content":"hi"},{"role":"system","content":"late"}]}`, "637a2bc4e4285c6de50be497ce54943ca40e17d2a8105fb5d7ad74ea3976ff0d"},
			{chat.Flavour{}, neutral.Endpoint{Kind: neutral.EpGenerate}, `{"model":"m","messages":[{"role":"user","content":"no system"}]}`, "5255831843f1734c9b4c7f6fa882579863c61f613dd1c97ac1988e100ab7dffb"},
			{chat.Flavour{}, neutral.Endpoint{Kind: neutral.EpGenerate}, `{"model":"m","messages":[{"role":"system","content":"x & y"},{"role":"user","content":"u"}]}`, "2d5b173ad2129bc777609215250051854d0e91d69728f26a6cc57ef5ad609157"},
			{responses.Flavour{}, neutral.Endpoint{Kind: neutral.EpGenerate}, `{"model":"m","instructions":"be brief","input":"hello"}`, "260401c26ade7c1fd1ecafe405dd6fa0eadce0acf27c9ef96b082e0a61a46a09"},
			{responses.Flavour{}, neutral.Endpoint{Kind: neutral.EpGenerate}, `{"model":"m","input":[{"role":"developer","content":"d"},{"role":"user","content":[{"type":"input_text","text":"hi"}]},{"role":"user","content":"x"}]}`, "63733bea1bd40cb27059e674dfb9573700893de8a733662f361d57d3ba1a00b9"},
			{gemini.Flavour{}, neutral.Endpoint{Kind: neutral.EpGenerate, Model: "g"}, `{"systemInstruction":{"parts":[{"text":"s"}]},"contents":[{"role":"model","parts":[{"text":"m"}]},{"parts":[{"text":"u"}]}]}`, "9d7127d43d68e18471986d62693470a097940faa9656b6d3e4dd6dc0983b304b"},
			{gemini.Flavour{}, neutral.Endpoint{Kind: neutral.EpGenerate, Model: "g"}, `{"system_instruction":{"parts":[{"text":"s2"}]},"contents":[{"role":"user","parts":[{"text":"u"}]}]}`, "ae7150c4e2f74f5056c89824ba55a401f56b9b71f8eb09ecde4f6bd113c7ab97"},
		} {
			ci, err := g.fl.ParseRequest(g.ep, []byte(g.body))
			if err != nil {
				t.Fatal(err)
			}
			if ci.ContentHash != "" {
				t.Fatalf("%d: hashed at parse", i)
			}
			if got := ci.SessionContentHash(); got != "content:"+g.want || ci.SessionContentHash() != got {
				t.Fatalf("%d %T: content hash %q, pinned content:%s", i, g.fl, got, g.want)
			}
			late, _ := g.fl.ParseRequest(g.ep, []byte(g.body))
			late.Release()
			if late.SessionContentHash() != "" {
				t.Fatalf("%d: hashed after Release", i)
			}
		}
	})
}
