package pool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/api"

	"github.com/dual-proxy/dual-proxy/internal/testbed/mockllm"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// mixMember is one mock channel of a mixed pool: its channel api and the
// mockllm API it speaks (an `openai` channel speaks Chat and Responses;
// the mock for it serves the API the test expects it to be sent).
type mixMember struct {
	name, api, speaks string
	turns             []mockllm.Turn
}

type mixWorld struct {
	t     *testing.T
	pool  *Pool
	srv   *httptest.Server
	mocks map[string]*mockllm.Channel
}

const mixToken = "dpx-test-token"

func newMixWorld(t *testing.T, members []mixMember, poolExtra string) *mixWorld {
	t.Helper()
	w := &mixWorld{t: t, mocks: map[string]*mockllm.Channel{}}
	var y strings.Builder
	y.WriteString("channels:\n")
	var names []string
	for _, m := range members {
		ch := &mockllm.Channel{API: m.speaks, Turns: m.turns}
		srv := httptest.NewServer(ch)
		t.Cleanup(srv.Close)
		w.mocks[m.name] = ch
		names = append(names, m.name)
		fmt.Fprintf(&y, "  %s: {api: %s, base_url: %q, api_key: sk-%s-secret}\n", m.name, m.api, srv.URL, m.name)
	}
	fmt.Fprintf(&y, "pools:\n  p:\n    members: [%s]\n%s", strings.Join(names, ", "), poolExtra)
	cfg, err := config.ParseConfig([]byte(y.String()), func(string) string { return "" })
	if err != nil {
		t.Fatalf("config: %v\n%s", err, y.String())
	}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	w.pool = New(cfg, Options{Transport: tr, Token: mixToken})
	w.srv = httptest.NewServer(w.pool)
	t.Cleanup(w.srv.Close)
	return w
}

// clientCall is a request of one client API.
type clientCall struct {
	path string
	body string
	hdr  map[string]string
}

func clientRequest(api apikind.Kind, stream bool, text string) clientCall {
	msg := mustJSONString(text)
	switch api {
	case apikind.Chat:
		opts := ""
		if stream {
			opts = `"stream_options":{"include_usage":true},`
		}
		return clientCall{"/v1/chat/completions", fmt.Sprintf(`{"model":"m","stream":%v,`+opts+`"messages":[{"role":"system","content":"be brief"},{"role":"user","content":%s}]}`, stream, msg),
			map[string]string{"Authorization": "Bearer " + mixToken}}
	case apikind.Responses:
		return clientCall{"/v1/responses", fmt.Sprintf(`{"model":"m","stream":%v,"instructions":"be brief","input":%s}`, stream, msg),
			map[string]string{"Authorization": "Bearer " + mixToken}}
	case apikind.Gemini:
		path := "/v1beta/models/m:generateContent"
		if stream {
			path = "/v1beta/models/m:streamGenerateContent?alt=sse"
		}
		return clientCall{path, fmt.Sprintf(`{"systemInstruction":{"parts":[{"text":"be brief"}]},"contents":[{"role":"user","parts":[{"text":%s}]}]}`, msg),
			map[string]string{"x-goog-api-key": mixToken}}
	}
	return clientCall{"/v1/messages", fmt.Sprintf(`{"model":"m","max_tokens":100,"stream":%v,"system":"be brief","messages":[{"role":"user","content":%s}]}`, stream, msg),
		map[string]string{"x-api-key": mixToken, "anthropic-version": "2023-06-01"}}
}

func mustJSONString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func (w *mixWorld) do(c clientCall) (*http.Response, []byte) {
	w.t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, w.srv.URL+"/pool/p"+c.path, strings.NewReader(c.body))
	if err != nil {
		w.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range c.hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// answerOf reads a client answer with the translate decoders of its API.
func answerOf(t *testing.T, kind apikind.Kind, stream bool, body []byte) *neutral.Response {
	t.Helper()
	if !stream {
		r, err := api.DecodeResponse(kind, body)
		if err != nil {
			t.Fatalf("client answer: %v\n%s", err, body)
		}
		return r
	}
	dec := api.NewStreamDecoder(kind)
	r := &neutral.Response{}
	for _, block := range strings.Split(string(body), "\n\n") {
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
			t.Fatalf("client stream: %v\n%s", err, body)
		}
		for _, e := range evs {
			switch e.Kind {
			case neutral.EvStart:
				r.Model = e.Model
			case neutral.EvPartStart:
				r.Parts = append(r.Parts, e.Part)
			case neutral.EvDelta:
				r.Parts[len(r.Parts)-1].Text += e.Part.Text
				r.Parts[len(r.Parts)-1].Args += e.Part.Args
			case neutral.EvFinish:
				r.Stop, r.Usage = e.Stop, e.Usage
			case neutral.EvError:
				t.Fatalf("client stream carries an error: %+v", e.Err)
			}
		}
	}
	if _, err := dec.End(); err != nil {
		t.Fatalf("client stream incomplete: %v\n%s", err, body)
	}
	return r
}

func textOf(r *neutral.Response) string {
	var b strings.Builder
	for _, p := range r.Parts {
		if p.Kind == neutral.KindText {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

var clientAPIs = []apikind.Kind{apikind.Anthropic, apikind.Chat, apikind.Responses, apikind.Gemini}

// memberKinds are the channel apis and what their mock speaks for a client
// of each API (an `openai` member is sent Responses for Responses clients).
func memberSpeaks(api string, client apikind.Kind) string {
	switch api {
	case config.APIAnthropic:
		return mockllm.Anthropic
	case config.APIGemini:
		return mockllm.Gemini
	case config.APIOpenAI:
		if client == apikind.Responses {
			return mockllm.Responses
		}
	}
	return mockllm.Chat
}

func TestEveryClientAPIOnEveryMemberAPI(t *testing.T) {
	const reply = "Hello ✓ 日本 \"q\""
	for _, api := range config.ChannelAPIs {
		for _, client := range clientAPIs {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("POOL-21/%s-client-on-%s-member/stream=%v", client, api, stream), func(t *testing.T) {
					w := newMixWorld(t, []mixMember{{name: "a", api: api, speaks: memberSpeaks(api, client),
						turns: []mockllm.Turn{{Text: reply, InputTokens: 10, CachedTokens: 90, OutputTokens: 3}}}}, "")
					resp, body := w.do(clientRequest(client, stream, "say hi"))
					if resp.StatusCode != 200 {
						t.Fatalf("status %d: %s", resp.StatusCode, body)
					}
					if got := textOf(answerOf(t, client, stream, body)); got != reply {
						t.Fatalf("text %q, want %q\n%s", got, reply, body)
					}
					calls := w.mocks["a"].Calls()
					if len(calls) != 1 || strings.Contains(calls[0].Query, "key=") {
						t.Fatalf("member calls %+v", calls)
					}
					rec := w.pool.Status().Recent
					same := string(client) == api || (api == config.APIOpenAI && (client == apikind.Chat || client == apikind.Responses)) ||
						(api == config.APIOpenAIChat && client == apikind.Chat)
					if len(rec) != 1 || rec[0].Translated == same || rec[0].API != string(client) {
						t.Fatalf("status record %+v (passthrough expected: %v)", rec, same)
					}
					if st := w.pool.Status(); st.Pools[0].Members[0].API != api {
						t.Fatalf("member api %q", st.Pools[0].Members[0].API)
					}
					if m := w.pool.Status().Pools[0].Members[0]; m.Cache.CacheReadTokens != 90 {
						t.Fatalf("cache accounting lost in translation: %+v", m.Cache)
					}
				})
			}
		}
	}
}

var _ = bytes.Equal
