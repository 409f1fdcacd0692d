package proxy

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
	"github.com/dual-proxy/dual-proxy/pool"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// sseEvent writes one Anthropic SSE event and flushes it.
func sseEvent(w http.ResponseWriter, name, data string) {
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data)
	w.(http.Flusher).Flush()
}

// streamingChannel is an Anthropic channel that streams one text delta per
// call; a call whose body mentions "hold" then waits for its context and
// reports the cancel on cancelled.
func streamingChannel(t testing.TB, cancelled chan<- struct{}) *httptest.Server {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		sseEvent(w, "message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"usage":{"input_tokens":1,"output_tokens":0}}}`)
		sseEvent(w, "content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		sseEvent(w, "content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}`)
		if strings.Contains(string(b), "hold") {
			<-r.Context().Done()
			cancelled <- struct{}{}
			return
		}
		sseEvent(w, "content_block_stop", `{"type":"content_block_stop","index":0}`)
		sseEvent(w, "message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}`)
		sseEvent(w, "message_stop", `{"type":"message_stop"}`)
	}))
	t.Cleanup(up.Close)
	return up
}

// poolCall is a streamed Anthropic call of pool p saying text.
func poolCall(text string) string {
	body := `{"model":"m","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"` + text + `"}]}`
	return fmt.Sprintf("POST /pool/p/v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nX-Session-Id: s\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}

// TestHandoffPool: the model pool behind the proxy's listener, as an agent
// with ANTHROPIC_BASE_URL=http://127.0.0.1:PORT calls it: streamed calls
// and a proxied request on one keep-alive connection, and a client that
// leaves mid-stream cancelling the upstream call.
func TestHandoffPool(t *testing.T) {
	cancelled := make(chan struct{}, 1)
	up := streamingChannel(t, cancelled)
	cfg, err := config.ParseConfig([]byte("channels:\n  x: {api: anthropic, base_url: "+up.URL+", api_key: sk-test}\npools:\n  p: {members: [x]}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	mux := NewMux()
	mux.Handle("/pool/", pool.New(cfg, pool.Options{Transport: tr, Logger: slog.New(slog.DiscardHandler)}))
	origin := testworld.NewOrigin(t)
	addr, srv := proxytest.Start(t, New, Config{Handler: mux, LoopbackDirect: true})
	mux.Attach(srv)

	t.Run("POOL-1/HTTP-5b/streamed-calls-and-proxied-request-on-one-connection", func(t *testing.T) {
		rc := newRawClient(t, addr)
		for i := range 2 {
			rc.send(poolCall("say ok"))
			resp, body := proxytest.ReadResponse(t, rc.br, "POST")
			if resp.StatusCode != 200 || resp.Close || !strings.Contains(body, `"text":"hi"`) || !strings.Contains(body, "message_stop") {
				t.Fatalf("call %d: %d close=%v %q", i, resp.StatusCode, resp.Close, body)
			}
			rc.send("GET " + origin.URL + "/ HTTP/1.1\r\nHost: " + origin.Addr + "\r\n\r\n")
			rc.expect("GET", 200, origin.Greeting())
		}
		rc.send("GET /pool/status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		if resp, body := proxytest.ReadResponse(t, rc.br, "GET"); resp.StatusCode != 200 || resp.Close || !strings.Contains(body, `"p"`) {
			t.Fatalf("pool status: %d close=%v %.200q", resp.StatusCode, resp.Close, body)
		}
	})
	t.Run("POOL-9/client-leaving-mid-stream-cancels-upstream-call", func(t *testing.T) {
		rc := newRawClient(t, addr)
		rc.send(poolCall("hold"))
		resp, err := http.ReadResponse(rc.br, &http.Request{Method: "POST"})
		if err != nil {
			t.Fatal(err)
		}
		sse := bufio.NewReader(resp.Body)
		for {
			line, err := sse.ReadString('\n')
			if err != nil {
				t.Fatalf("stream ended before the delta: %v", err)
			}
			if strings.Contains(line, `"text":"hi"`) {
				break
			}
		}
		rc.c.Close()
		select {
		case <-cancelled:
		case <-time.After(5 * time.Second):
			t.Fatal("the upstream call was not cancelled when the client left")
		}
	})
}
