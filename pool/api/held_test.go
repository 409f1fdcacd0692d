package api

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/api/anthropic"
	"github.com/dual-proxy/dual-proxy/pool/api/chat"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
)

// heldEncoders are the request encoders that hold long strings back
// (held.go), each as its struct builder.
var heldEncoders = map[apikind.Kind]func(*neutral.Request, *wirefmt.HeldStrings) (any, error){
	apikind.Chat: func(r *neutral.Request, h *wirefmt.HeldStrings) (any, error) { return chat.ChatRequestOut(r, h) },
	apikind.Anthropic: func(r *neutral.Request, h *wirefmt.HeldStrings) (any, error) {
		return anthropic.AnthropicRequestOut(r, h)
	},
}

// checkHeld: r encoded with every non-empty string held back (min 1) and
// with marks spliced is json.Marshal of the same struct without holding,
// byte for byte, and EncodeRequest writes those bytes too.
func checkHeld(t *testing.T, r *neutral.Request) {
	t.Helper()
	for api, enc := range heldEncoders {
		v, err := enc(r, nil)
		if err != nil {
			continue
		}
		want, _ := json.Marshal(v)
		h := &wirefmt.HeldStrings{Min: 1}
		hv, _ := enc(r, h)
		got, ok := h.Marshal(hv)
		if ok && !bytes.Equal(got, want) {
			t.Fatalf("POOL-21/held-strings %s: spliced\n%s\njson.Marshal\n%s", api, got, want)
		}
		if full, err := EncodeRequest(api, r); err != nil || !bytes.Equal(full, want) {
			t.Fatalf("POOL-21/held-strings %s: EncodeRequest (%v)\n%s\njson.Marshal\n%s", api, err, full, want)
		}
	}
}

// TestHeldStrings: the Chat and Anthropic request encoders write
// json.Marshal's bytes for every request of the translation cases, for
// long prompts, and when a client's own JSON spells a mark (SPEC POOL-21:
// a translated request carries the client's text unchanged).
func TestHeldStrings(t *testing.T) {
	for _, rf := range reqFeatures {
		for api, form := range rf.Forms {
			t.Run(rf.Name+"/"+string(api), func(t *testing.T) {
				r, err := DecodeRequest(api, []byte(compact(form)), "m", true)
				if err != nil {
					return
				}
				checkHeld(t, r)
			})
		}
	}
	long := strings.Repeat("You are a coding agent; <answer> & \"briefly\" ✓ \u2028 ", 64)
	forged := `{"type":"object","description":"\u0000dual-proxy-held-0\u0000"}`
	for _, c := range []struct {
		name, body string
		spliced    bool // the marks come back once each: no second encode
	}{
		{"POOL-21/held-strings/long-system-and-turns", `{"model":"m","max_tokens":9,"system":` + mustString(long) +
			`,"messages":[{"role":"user","content":` + mustString(long) + `},{"role":"assistant","content":"ok"},{"role":"user","content":[{"type":"text","text":` + mustString(long+"2") + `}]}]}`, true},
		// A mark without this process's heldWord is no mark: spliced once.
		{"POOL-21/held-strings/forged-mark-in-a-tool-schema", `{"model":"m","max_tokens":9,"system":` + mustString(long) +
			`,"tools":[{"name":"t","input_schema":` + forged + `}],"messages":[{"role":"user","content":"hi"}]}`, true},
		{"POOL-21/held-strings/forged-mark-as-text", `{"model":"m","max_tokens":9,"system":` + mustString(long) +
			`,"messages":[{"role":"user","content":"\u0000dual-proxy-held-0\u0000"}]}`, true},
		{"POOL-21/held-strings/mark-with-the-word-as-text", `{"model":"m","max_tokens":9,"system":` + mustString(long) +
			`,"messages":[{"role":"user","content":"\u0000dual-proxy-held-` + wirefmt.HeldWord + `-0\u0000"}]}`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := DecodeRequest(apikind.Anthropic, []byte(c.body), "m", true)
			if err != nil {
				t.Fatal(err)
			}
			checkHeld(t, r)
			for api, enc := range heldEncoders {
				h := &wirefmt.HeldStrings{Min: wirefmt.MinHeld}
				v, _ := enc(r, h)
				if _, ok := h.Marshal(v); ok != c.spliced {
					t.Fatalf("%s: spliced %v, want %v", api, ok, c.spliced)
				}
			}
		})
	}
}

func mustString(s string) string { b, _ := json.Marshal(s); return string(b) }

// FuzzHeldStrings is TestHeldStrings over any request a decoder accepts.
func FuzzHeldStrings(f *testing.F) {
	for _, rf := range reqFeatures {
		for i, api := range apis {
			if form, ok := rf.Forms[api]; ok {
				f.Add(append([]byte{byte(i)}, compact(form)...))
			}
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		r, err := DecodeRequest(apis[int(in[0])%len(apis)], in[1:], "m", true)
		if err != nil {
			return
		}
		checkHeld(t, r)
	})
}

// TestHeldStringOfDroppedPlace: a held string whose place the encoder drops (an
// assistant turn with only reasoning text translated to Chat is left out)
// leaves its mark unused; a client's own JSON that spells that mark must
// not receive the held string (SPEC POOL-21: the client's text unchanged,
// Marshal's bytes).
func TestHeldStringOfDroppedPlace(t *testing.T) {
	t.Run("POOL-21/dropped-held-string-not-spliced-into-a-forged-mark", func(t *testing.T) {
		long := strings.Repeat("secret reasoning ", 40)
		r := &neutral.Request{Model: "m", Messages: []neutral.Message{
			{Role: neutral.RoleUser, Parts: []neutral.Part{{Kind: neutral.KindText, Text: "hi"}}},
			{Role: neutral.RoleAssistant, Parts: []neutral.Part{{Kind: neutral.KindReasoning, Text: long}}},
			{Role: neutral.RoleUser, Parts: []neutral.Part{{Kind: neutral.KindText, Text: "again"}}},
		}, Tools: []neutral.Tool{{Name: "t", Schema: json.RawMessage(`{"type":"object","description":"\u0000dual-proxy-held-0\u0000"}`)}}}
		v, err := chat.ChatRequestOut(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(v)
		got, err := EncodeRequest(apikind.Chat, r)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("EncodeRequest (%v)\n%s\njson.Marshal\n%s", err, got, want)
		}
	})
}
