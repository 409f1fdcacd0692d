package api

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
)

// TestAnswerModel: a translated answer names the model the member's answer
// names, as a same-API answer passed through does (SPEC POOL-21), and the
// id the member was asked for (the model argument) when the member's answer
// names none.
func TestAnswerModel(t *testing.T) {
	apis := []apikind.Kind{apikind.Anthropic, apikind.Chat, apikind.Responses, apikind.Gemini}
	for _, to := range apis {
		for _, member := range []string{"member-dated-2025", ""} {
			t.Run(fmt.Sprintf("POOL-21/complete-answer-to-%s/member-model=%q", to, member), func(t *testing.T) {
				want := member
				if want == "" {
					want = "target-id"
				}
				out, err := EncodeResponse(to, &neutral.Response{ID: "x", Model: member, Parts: []neutral.Part{{Kind: neutral.KindText, Text: "hi"}}, Stop: neutral.StopEnd}, "target-id")
				if err != nil {
					t.Fatal(err)
				}
				r, err := DecodeResponse(to, out)
				if err != nil || r.Model != want {
					t.Fatalf("model %q (%v), want %q\n%s", r.Model, err, want, out)
				}
			})
			t.Run(fmt.Sprintf("POOL-21/stream-to-%s/member-model=%q", to, member), func(t *testing.T) {
				want := member
				if want == "" {
					want = "target-id"
				}
				// An Anthropic member's stream: message_start with or without a model.
				s := NewStream(apikind.Anthropic, to, "target-id")
				start := `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"usage":{"input_tokens":1,"output_tokens":0}` +
					map[bool]string{true: `,"model":"` + member + `"`, false: ""}[member != ""] + `}}`
				var out strings.Builder
				for _, ev := range [][2]string{{"message_start", start},
					{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
					{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}`}} {
					b, err := s.Feed(ev[0], []byte(ev[1]))
					if err != nil {
						t.Fatal(err)
					}
					out.Write(b)
				}
				dec := NewStreamDecoder(to)
				for _, block := range strings.Split(out.String(), "\n\n") {
					name, data := "", ""
					for _, line := range strings.Split(block, "\n") {
						if v, ok := strings.CutPrefix(line, "event: "); ok {
							name = v
						} else if v, ok := strings.CutPrefix(line, "data: "); ok {
							data = v
						}
					}
					if data == "" {
						continue
					}
					evs, err := dec.Decode(name, []byte(data))
					if err != nil {
						t.Fatal(err)
					}
					for _, e := range evs {
						if e.Kind == neutral.EvStart {
							if e.Model != want {
								t.Fatalf("stream names model %q, want %q\n%s", e.Model, want, out.String())
							}
							return
						}
					}
				}
				t.Fatalf("no start event\n%s", out.String())
			})
		}
	}
}
