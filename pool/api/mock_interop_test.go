package api

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/testbed/mockllm"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
)

// summary is what a client learns from an answer: the text, the reasoning,
// the tool calls and the stop reason.
type summary struct {
	Text, Reasoning string
	Calls           []string // name + args
	Stop            neutral.StopReason
}

func summarize(r *neutral.Response) summary {
	var s summary
	for _, p := range r.Parts {
		switch p.Kind {
		case neutral.KindText:
			s.Text += p.Text
		case neutral.KindReasoning:
			s.Reasoning += p.Text
		case neutral.KindToolCall:
			s.Calls = append(s.Calls, p.Name+" "+compact(p.Args))
		}
	}
	s.Stop = r.Stop
	return s
}

// collect folds a neutral event sequence into the answer it describes.
func collect(evs []neutral.Event) *neutral.Response {
	r := &neutral.Response{}
	for _, e := range evs {
		switch e.Kind {
		case neutral.EvPartStart:
			r.Parts = append(r.Parts, e.Part)
		case neutral.EvDelta:
			p := &r.Parts[len(r.Parts)-1]
			p.Text += e.Part.Text
			p.Args += e.Part.Args
		case neutral.EvFinish:
			r.Stop = e.Stop
		}
	}
	return r
}

var mockAPI = map[apikind.Kind]string{apikind.Anthropic: mockllm.Anthropic, apikind.Chat: mockllm.Chat, apikind.Responses: mockllm.Responses, apikind.Gemini: mockllm.Gemini}

func mockCall(t *testing.T, api apikind.Kind, turn mockllm.Turn, stream bool) []byte {
	t.Helper()
	srv := httptest.NewServer(&mockllm.Channel{API: mockAPI[api], Turns: []mockllm.Turn{turn}})
	defer srv.Close()
	path := map[apikind.Kind]string{apikind.Anthropic: "/v1/messages", apikind.Chat: "/v1/chat/completions", apikind.Responses: "/v1/responses", apikind.Gemini: For(apikind.Gemini).UpstreamPath("m", stream)}[api]
	body := fmt.Sprintf(`{"model":"m","stream":%v}`, stream)
	resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("mock: %d %s", resp.StatusCode, b)
	}
	return b
}

// TestMockMembers converts answers of independently written mock channels
// (internal/testbed/mockllm) for every client API and reads them back with that
// API's decoder: what the client sees is what the member said.
func TestMockMembers(t *testing.T) {
	turns := map[string]mockllm.Turn{
		"text":      {Text: "Hello, wörld ✓ \"quoted\"", OutputTokens: 3},
		"reasoning": {Reasoning: "think ü", Text: "answer"},
		"tools": {Text: "calling", ToolCalls: []mockllm.ToolCall{{ID: "call_a", Name: "read", Args: `{"path":"a\"b.go","n":1}`},
			{ID: "call_b", Name: "grep", Args: `{"q":"日本"}`}}},
	}
	for name, turn := range turns {
		want := summary{Text: turn.Text, Reasoning: turn.Reasoning, Stop: neutral.StopEnd}
		for _, tc := range turn.ToolCalls {
			want.Calls = append(want.Calls, tc.Name+" "+compact(tc.Args))
			want.Stop = neutral.StopToolUse
		}
		for _, member := range apis {
			for _, client := range apis {
				t.Run(fmt.Sprintf("POOL-21/mock-member/%s/%s-to-%s/stream", name, member, client), func(t *testing.T) {
					raw := mockCall(t, member, turn, true)
					s := NewStream(member, client, "m")
					var out []byte
					for _, e := range parseSSE(t, raw) {
						b, err := s.Feed(e.name, []byte(e.data))
						if err != nil {
							t.Fatal(err)
						}
						out = append(out, b...)
					}
					b, err := s.End()
					if err != nil {
						t.Fatal(err)
					}
					back := NewStreamDecoder(client)
					var evs []neutral.Event
					for _, e := range parseSSE(t, append(out, b...)) {
						got, err := back.Decode(e.name, []byte(e.data))
						if err != nil {
							t.Fatal(err)
						}
						evs = append(evs, got...)
					}
					if _, err := back.End(); err != nil {
						t.Fatal(err)
					}
					if got := summarize(collect(evs)); fmt.Sprint(got) != fmt.Sprint(want) {
						t.Fatalf("got %+v\nwant %+v", got, want)
					}
				})
				t.Run(fmt.Sprintf("POOL-21/mock-member/%s/%s-to-%s/plain", name, member, client), func(t *testing.T) {
					r, err := DecodeResponse(member, mockCall(t, member, turn, false))
					if err != nil {
						t.Fatal(err)
					}
					body, err := EncodeResponse(client, r, "m")
					if err != nil {
						t.Fatal(err)
					}
					if !json.Valid(body) {
						t.Fatalf("not JSON: %s", body)
					}
					back, err := DecodeResponse(client, body)
					if err != nil {
						t.Fatal(err)
					}
					if got := summarize(back); fmt.Sprint(got) != fmt.Sprint(want) {
						t.Fatalf("got %+v\nwant %+v", got, want)
					}
				})
			}
		}
	}
}
