package pool

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/config"
)

// idleGateway is a TCP gateway on 127.0.0.1 between the pool and one
// channel that cuts a connection on which no byte flowed either way for
// idle, as HTTP gateways with an idle timeout do.
type idleGateway struct {
	ln     net.Listener
	idle   time.Duration
	target atomic.Pointer[string]
	wg     sync.WaitGroup
}

func newIdleGateway(t *testing.T, idle time.Duration) *idleGateway {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &idleGateway{ln: ln, idle: idle}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			g.wg.Add(1)
			go func() { defer g.wg.Done(); g.relay(c) }()
		}
	}()
	t.Cleanup(func() { ln.Close(); g.wg.Wait() })
	return g
}

// relay copies both ways, closing both sides after idle without a byte.
func (g *idleGateway) relay(c net.Conn) {
	defer c.Close()
	up, err := net.Dial("tcp", *g.target.Load())
	if err != nil {
		return
	}
	defer up.Close()
	cut := time.AfterFunc(g.idle, func() { c.Close(); up.Close() })
	defer cut.Stop()
	var done sync.WaitGroup
	pipe := func(dst, src net.Conn) {
		defer done.Done()
		buf := make([]byte, 4096)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				cut.Reset(g.idle)
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		c.Close()
		up.Close()
	}
	done.Add(2)
	go pipe(up, c)
	go pipe(c, up)
	done.Wait()
}

// dial is a Transport dialer that reaches every channel through the gateway.
func (g *idleGateway) dial(ctx context.Context, network, _ string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, g.ln.Addr().String())
}

// slowAnswer streams ten text deltas 100 ms apart when asked for a stream,
// and otherwise answers with JSON after the same second of silence.
func slowAnswer(w http.ResponseWriter, r *http.Request, _ int) {
	var body struct {
		Stream bool `json:"stream"`
	}
	_ = json.Unmarshal(recordedBody(r), &body)
	if !body.Stream {
		select {
		case <-time.After(time.Second):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"msg_a","type":"message","role":"assistant","content":[{"type":"text","text":"xxxxxxxxxx"}],"usage":{"input_tokens":7,"output_tokens":17}}`)
		return
	}
	sseHead(w)
	messageStart(w, "a", map[string]any{"input_tokens": 7, "cache_read_input_tokens": 11, "cache_creation_input_tokens": 13, "output_tokens": 0})
	for i := 0; i < 10; i++ {
		select {
		case <-time.After(100 * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		textDelta(w, "x")
	}
	sseWrite(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	sseWrite(w, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "end_turn"},
		"usage": map[string]any{"output_tokens": 17}})
	sseWrite(w, "message_stop", map[string]any{"type": "message_stop"})
}

// anthropicAnswer is the part of a Messages answer the tests read.
type anthropicAnswer struct {
	Type    string `json:"type"`
	Content []struct {
		Text string `json:"text"`
	} `json:"content"`
	Usage struct {
		Input      int `json:"input_tokens"`
		CacheRead  int `json:"cache_read_input_tokens"`
		CacheWrite int `json:"cache_creation_input_tokens"`
		Output     int `json:"output_tokens"`
	} `json:"usage"`
	Error struct {
		Type string `json:"type"`
	} `json:"error"`
}

func decodeAnswer(t *testing.T, body string) anthropicAnswer {
	t.Helper()
	var a anthropicAnswer
	if err := json.Unmarshal([]byte(body), &a); err != nil {
		t.Fatalf("answer not JSON: %v: %s", err, body)
	}
	return a
}

func TestNonStreamedCallThroughIdleGateway(t *testing.T) {
	gatewayWorld := func(t *testing.T, extra string) *world {
		gw := newIdleGateway(t, 300*time.Millisecond)
		tr := &http.Transport{DialContext: gw.dial}
		t.Cleanup(tr.CloseIdleConnections)
		w := newWorld(t, []string{"a"}, []behaviour{slowAnswer}, extra+"    response_timeout_ms: 20000\n", Options{Transport: tr})
		addr := w.mocks["a"].srv.Listener.Addr().String()
		gw.target.Store(&addr)
		return w
	}
	t.Run("POOL-7b/non-streamed-call-without-stream-upstream-is-cut-by-the-gateway", func(t *testing.T) {
		w := gatewayWorld(t, "")
		resp, body := w.call("s1", false)
		if resp.StatusCode == 200 {
			t.Fatalf("a non-streamed call silent for 1 s passed a 300 ms idle gateway: %s", body)
		}
	})
	t.Run("POOL-7b/stream-upstream-builds-the-answer-and-its-usage-from-the-stream", func(t *testing.T) {
		w := gatewayWorld(t, "    stream_upstream: true\n")
		resp, body := w.call("s1", false)
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			t.Fatalf("status %d %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		a := decodeAnswer(t, body)
		if a.Type != "message" || len(a.Content) != 1 || a.Content[0].Text != "xxxxxxxxxx" {
			t.Fatalf("answer %s", body)
		}
		if u := a.Usage; u.Input != 7 || u.CacheRead != 11 || u.CacheWrite != 13 || u.Output != 17 {
			t.Fatalf("usage %+v, want the stream's 7/11/13/17: %s", u, body)
		}
		if got := w.mocks["a"].req(0).Body["stream"]; got != true {
			t.Fatalf("member asked with stream=%v", got)
		}
	})
}

func TestStreamUpstreamFailures(t *testing.T) {
	const extra = "    stream_upstream: true\n"
	t.Run("POOL-7b/error-event-mid-stream-is-the-error-answer", func(t *testing.T) {
		w := newWorld(t, []string{"a", "b"}, []behaviour{func(w http.ResponseWriter, r *http.Request, _ int) {
			sseHead(w)
			messageStart(w, "a", nil)
			textDelta(w, "half")
			sseWrite(w, "error", map[string]any{"type": "error", "error": map[string]any{"type": "overloaded_error", "message": "busy"}})
		}, okAnswer("b")}, "    strategy: failover\n"+extra, Options{})
		resp, body := w.call("s1", false)
		if resp.StatusCode != 529 || decodeAnswer(t, body).Error.Type != "overloaded_error" {
			t.Fatalf("status %d: %s; want 529 overloaded_error", resp.StatusCode, body)
		}
		if n := w.mocks["b"].calls(); n != 0 {
			t.Fatalf("failover after visible output: b got %d calls", n)
		}
	})
	t.Run("POOL-7b/error-event-before-output-fails-over", func(t *testing.T) {
		w := newWorld(t, []string{"a", "b"}, []behaviour{func(w http.ResponseWriter, r *http.Request, _ int) {
			sseHead(w)
			sseWrite(w, "error", map[string]any{"type": "error", "error": map[string]any{"type": "overloaded_error", "message": "busy"}})
		}, okAnswer("b")}, "    strategy: failover\n"+extra, Options{})
		resp, body := w.call("s1", false)
		if resp.StatusCode != 200 || decodeAnswer(t, body).Content[0].Text != "hi from b" {
			t.Fatalf("status %d: %s; want b's answer", resp.StatusCode, body)
		}
	})
	t.Run("POOL-7b/member-refusing-streams-is-asked-without-one", func(t *testing.T) {
		w := newWorld(t, []string{"a"}, []behaviour{func(w http.ResponseWriter, r *http.Request, n int) {
			if strings.Contains(string(recordedBody(r)), `"stream":true`) {
				statusAnswer(400, nil, `{"type":"error","error":{"type":"invalid_request_error","message":"streaming is not supported by this endpoint"}}`)(w, r, n)
				return
			}
			okAnswer("a")(w, r, n)
		}}, extra, Options{})
		resp, body := w.call("s1", false)
		if resp.StatusCode != 200 || decodeAnswer(t, body).Content[0].Text != "hi from a" {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
		if n := w.mocks["a"].calls(); n != 2 {
			t.Fatalf("member got %d calls, want the stream request and the plain one", n)
		}
	})
	t.Run("POOL-7b/chat-member-usage-from-the-usage-chunk", func(t *testing.T) {
		w := newWorldAPI(t, config.APIOpenAIChat, []string{"a"}, []behaviour{func(w http.ResponseWriter, r *http.Request, _ int) {
			sseHead(w)
			for _, d := range []string{
				`{"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"he"},"finish_reason":null}]}`,
				`{"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"llo"},"finish_reason":"stop"}]}`,
				`{"id":"c1","object":"chat.completion.chunk","model":"m","choices":[],"usage":{"prompt_tokens":50,"completion_tokens":9,"total_tokens":59,"prompt_tokens_details":{"cached_tokens":40}}}`,
				`[DONE]`} {
				fmt.Fprintf(w, "data: %s\n\n", d)
				w.(http.Flusher).Flush()
			}
		}}, nil, extra, Options{})
		resp := w.do(context.Background(), "/pool/p/v1/chat/completions", nil, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var a struct {
			Choices []struct {
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
			} `json:"choices"`
			Usage struct {
				Prompt     int `json:"prompt_tokens"`
				Completion int `json:"completion_tokens"`
				Details    struct {
					Cached int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(b, &a); err != nil || resp.StatusCode != 200 || len(a.Choices) != 1 || a.Choices[0].Message.Content != "hello" {
			t.Fatalf("status %d: %s (%v)", resp.StatusCode, b, err)
		}
		if a.Usage.Prompt != 50 || a.Usage.Completion != 9 || a.Usage.Details.Cached != 40 {
			t.Fatalf("usage %+v, want the stream's 50/9/40: %s", a.Usage, b)
		}
		so, _ := w.mocks["a"].req(0).Body["stream_options"].(map[string]any)
		if so["include_usage"] != true {
			t.Fatalf("member asked without include_usage: %v", w.mocks["a"].req(0).Body)
		}
	})
}
