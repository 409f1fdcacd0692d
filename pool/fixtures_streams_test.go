package pool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/testbed/fixtures"
	"github.com/dual-proxy/dual-proxy/pool/api"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// streamMember is a member API whose documented answers testdata/streams
// holds: the fixtures' directory, the channel api word of a member speaking
// it, and the client APIs a pool sends to it in that API (an `openai`
// channel speaks Responses to Responses clients only).
type streamMember struct {
	api     apikind.Kind
	dir     string
	channel string
	clients []apikind.Kind
}

var streamMembers = []streamMember{
	{apikind.Anthropic, "anthropic", config.APIAnthropic, clientAPIs},
	{apikind.Chat, "chat", config.APIOpenAIChat, clientAPIs},
	{apikind.Responses, "responses", config.APIOpenAI, []apikind.Kind{apikind.Responses}},
	{apikind.Gemini, "gemini", config.APIGemini, clientAPIs},
}

// replayMember is a member channel that answers every model call with one
// recorded answer: the stream for a streamed call, the non-streamed answer
// (when the fixture has one) for the others.
func replayMember(t *testing.T, stream, answer []byte) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		streamed := strings.Contains(r.URL.Path, "streamGenerateContent") || bytes.Contains(body, []byte(`"stream":true`))
		if streamed || answer == nil {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write(stream)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// streamPool is a pool of one member, the replaying channel at url, serving
// on a loopback port; it returns the pool's base URL.
func streamPool(t *testing.T, channel, url string) string {
	t.Helper()
	y := fmt.Sprintf("channels:\n  m: {api: %s, base_url: %q, api_key: sk-test-member}\npools:\n  p:\n    members: [m]\n", channel, url)
	cfg, err := config.ParseConfig([]byte(y), func(string) string { return "" })
	if err != nil {
		t.Fatalf("config: %v\n%s", err, y)
	}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	srv := httptest.NewServer(New(cfg, Options{Transport: tr, Token: mixToken, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// streamCall sends c to the pool at base and returns the status and body.
func streamCall(t *testing.T, base string, c clientCall) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/pool/p"+c.path, strings.NewReader(c.body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range c.hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	return resp.StatusCode, b
}

// clientAnswer is what a client of api reads from a stream: the answer
// assembled from its events and the error that ended it, if any.
type clientAnswer struct {
	resp     neutral.Response
	err      *neutral.Error
	finished bool
}

// readClientStream decodes the stream b of api with its decoder.
func readClientStream(t *testing.T, kind apikind.Kind, b []byte) clientAnswer {
	t.Helper()
	var a clientAnswer
	dec := api.NewStreamDecoder(kind)
	apply := func(evs []neutral.Event) {
		for _, e := range evs {
			switch e.Kind {
			case neutral.EvPartStart:
				a.resp.Parts = append(a.resp.Parts, e.Part)
			case neutral.EvDelta:
				if n := len(a.resp.Parts); n > 0 {
					a.resp.Parts[n-1].Text += e.Part.Text
					a.resp.Parts[n-1].Args += e.Part.Args
				}
			case neutral.EvFinish:
				a.resp.Stop, a.resp.Usage, a.finished = e.Stop, e.Usage, true
			case neutral.EvError:
				a.err = e.Err
			}
		}
	}
	r := wirefmt.NewSSEReader(bytes.NewReader(b))
	defer r.Release()
	for i := 0; i < 100000; i++ {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		if ev.Comment {
			continue
		}
		evs, err := dec.Decode(ev.Name, ev.Data)
		if err != nil {
			t.Fatalf("event %q: %v\n%s", ev.Name, err, b)
		}
		apply(evs)
	}
	if evs, err := dec.End(); err == nil {
		apply(evs)
	} else if a.err == nil {
		t.Fatalf("stream incomplete: %v\n%s", err, b)
	}
	return a
}

// answerCalls are the tool calls of r as name and arguments compared by value.
func answerCalls(t *testing.T, r *neutral.Response) []string {
	t.Helper()
	var out []string
	for _, p := range r.Parts {
		if p.Kind != neutral.KindToolCall {
			continue
		}
		var v any
		if err := json.Unmarshal([]byte(neutral.ArgsOrEmpty(p.Args)), &v); err != nil {
			t.Fatalf("tool call %s: arguments not JSON: %q", p.Name, p.Args)
		}
		b, _ := json.Marshal(v)
		out = append(out, p.Name+" "+string(b))
	}
	return out
}

// sameClientAnswer fails unless got carries want's text, tool calls and
// stop reason.
func sameClientAnswer(t *testing.T, want, got *neutral.Response) {
	t.Helper()
	if w, g := textOf(want), textOf(got); w != g {
		t.Errorf("text %q, want %q", g, w)
	}
	if w, g := answerCalls(t, want), answerCalls(t, got); strings.Join(w, "\n") != strings.Join(g, "\n") {
		t.Errorf("tool calls %q, want %q", g, w)
	}
	if want.Stop != got.Stop {
		t.Errorf("stop %q, want %q", got.Stop, want.Stop)
	}
}

// TestRecordedStreamsThroughPool sends a call of each client API through a
// pool whose one member replays a documented answer of its API
// (testdata/streams): a streamed client gets, in its own API, the text, tool
// calls and stop reason of the member's stream (POOL-21); a stream the
// provider ended with an error before any output is the pool's error answer
// (the member failed before the commit point, POOL-7), one that failed after
// it reaches the client as its API's error event after the text so far; a
// non-streamed client gets the member's non-streamed answer.
func TestRecordedStreamsThroughPool(t *testing.T) {
	for _, m := range streamMembers {
		for _, p := range fixtures.Glob(t, "streams/"+m.dir+"/*.sse") {
			name := strings.TrimSuffix(filepath.Base(p), ".sse")
			stream := fixtures.Read(t, "streams", m.dir, name+".sse")
			var answer []byte
			if b, err := os.ReadFile(fixtures.Path(t, "streams", m.dir, name+".json")); err == nil {
				answer = b
			}
			want := readClientStream(t, m.api, stream)
			for _, client := range m.clients {
				t.Run(fmt.Sprintf("POOL-21/%s-member/%s/%s-client", m.dir, name, client), func(t *testing.T) {
					base := streamPool(t, m.channel, replayMember(t, stream, answer).URL)
					status, body := streamCall(t, base, clientRequest(client, true, "hi"))
					if want.err != nil && want.resp.Parts == nil {
						if status < 400 {
							t.Fatalf("a member that failed before any output is answered %d:\n%s", status, body)
						}
						if e := neutral.DecodeError(status, body); e.Message == "" {
							t.Errorf("the pool's error answer is no error document of the client's API:\n%s", body)
						}
						return
					}
					if status != http.StatusOK {
						t.Fatalf("status %d:\n%s", status, body)
					}
					got := readClientStream(t, client, body)
					if want.err != nil {
						if got.err == nil {
							t.Errorf("the member's error after the commit point does not reach the client:\n%s", body)
						}
						if w, g := textOf(&want.resp), textOf(&got.resp); !strings.HasPrefix(w, g) || g == "" {
							t.Errorf("text before the error %q, want %q", g, w)
						}
						return
					}
					if !got.finished {
						t.Fatalf("the client's stream does not finish:\n%s", body)
					}
					sameClientAnswer(t, &want.resp, &got.resp)
					if answer == nil {
						return
					}
					status, body = streamCall(t, base, clientRequest(client, false, "hi"))
					if status != http.StatusOK {
						t.Fatalf("non-streamed: status %d:\n%s", status, body)
					}
					r, err := api.DecodeResponse(client, body)
					if err != nil {
						t.Fatalf("non-streamed answer: %v\n%s", err, body)
					}
					sameClientAnswer(t, &want.resp, r)
				})
			}
		}
	}
}
