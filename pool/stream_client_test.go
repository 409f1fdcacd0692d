package pool

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// The one-goroutine-per-stream relay under a client that reads slowly, a
// client that leaves, and a member that stalls, translated (Chat client,
// Anthropic member: SPEC POOL-21) where the translation's own buffers are
// involved. A cancel at the commit point is in cancel_test.go.

const anStartEvents = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_x\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n" +
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"

const anEndEvents = "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
	"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":6}}\n\n" +
	"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"

const chatStreamBody = `{"model":"m","stream":true,"messages":[{"role":"user","content":"say ok"}]}`

// gateWriter is a client that stops reading while its gate is set: Write
// blocks until the gate is closed (the kernel's buffers full, in effect).
type gateWriter struct {
	flushRecorder
	gmu     sync.Mutex
	gate    chan struct{}
	blocked chan struct{} // receives once per Write that blocks
}

func (w *gateWriter) Write(b []byte) (int, error) {
	w.gmu.Lock()
	g := w.gate
	w.gmu.Unlock()
	if g != nil {
		select {
		case w.blocked <- struct{}{}:
		default:
		}
		<-g
	}
	return w.flushRecorder.Write(b)
}

func (w *gateWriter) hold() {
	w.gmu.Lock()
	w.gate = make(chan struct{})
	w.gmu.Unlock()
}

func (w *gateWriter) release() {
	w.gmu.Lock()
	close(w.gate)
	w.gate = nil
	w.gmu.Unlock()
}

// poolGoroutines counts the goroutines running pool code (this package's
// non-test functions).
func poolGoroutines() int {
	buf := make([]byte, 1<<20)
	n := 0
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "dual-proxy/pool.(*") && !strings.Contains(g, "_test.go") {
			n++
		}
	}
	return n
}

// TestSlowClient: while the client does not read, the pool does not read
// the member either (the member's stream waits in the member's socket, not
// in the pool's memory), no goroutine is added per event or per ping, and
// the client's slowness is not the member's silence: stream_idle_timeout
// counts only the wait for the member's next event (SPEC POOL-7; before,
// a client that paused longer than the idle timeout cut the stream and
// cost the member a timeout failure).
func TestSlowClient(t *testing.T) {
	cfg, err := config.ParseConfig([]byte("channels:\n  an: {api: anthropic, base_url: 'http://127.0.0.1:9', api_key: sk-slow-key}\n"+
		"pools:\n  pa:\n    members: [an]\n    stream_idle_timeout_ms: 200\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	chunks := make(chan string)
	p := New(cfg, Options{Transport: chunkChannel{chunks}, Logger: discardLogger(), PingInterval: 20 * time.Millisecond})
	r, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/pool/pa/v1/chat/completions", strings.NewReader(chatStreamBody))
	r.Header.Set("Content-Type", "application/json")
	w := &gateWriter{flushRecorder: flushRecorder{h: http.Header{}}, blocked: make(chan struct{}, 1)}
	done := make(chan struct{})
	go func() { defer close(done); p.ServeHTTP(w, r) }()

	chunks <- anStartEvents + anDelta("d0")
	w.waitFlushed(t, `"d0"`)
	w.hold()
	chunks <- anDelta("d1") // read, translated, and its write blocks
	<-w.blocked
	t.Run("POOL-7/slow-client-member-not-read-ahead", func(t *testing.T) {
		select {
		case chunks <- anDelta("d2"):
			t.Fatal("the pool read the member's next event while its write to the client was blocked")
		case <-time.After(600 * time.Millisecond): // 3 idle timeouts, 30 ping intervals
		}
	})
	t.Run("POOL-7/slow-client-no-goroutine-per-event-or-ping", func(t *testing.T) {
		// The serving goroutine, and at most one ping waiting for the write lock.
		if n := poolGoroutines(); n > 2 {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines in pool code while one stream waits for its client:\n%s", n, buf[:runtime.Stack(buf, true)])
		}
	})
	w.release()
	sent := make(chan bool)
	go func() {
		for _, c := range []string{anDelta("d2"), anDelta("d3"), anEndEvents} {
			select {
			case chunks <- c:
			case <-time.After(5 * time.Second):
				sent <- false
				return
			}
		}
		close(chunks)
		sent <- true
	}()
	t.Run("POOL-7/slow-client-is-not-member-idle", func(t *testing.T) {
		if !<-sent {
			t.Fatal("the pool stopped reading the member after the client's pause")
		}
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("the call did not end")
		}
		got := w.buf.String()
		for _, want := range []string{`"d1"`, `"d2"`, `"d3"`, `"finish_reason":"stop"`, "[DONE]"} {
			if !strings.Contains(got, want) {
				t.Fatalf("%s missing from the client's stream:\n%s", want, got)
			}
		}
		if strings.Contains(got, `"error"`) {
			t.Fatalf("the client's pause became an error:\n%s", got)
		}
		if m := p.Status().Pools[0].Members[0]; m.Failures != 0 {
			t.Fatalf("the member was blamed for the client's pause: %+v", m)
		}
	})
}

// TestTranslatedClientGone: a Chat client that leaves a translated stream
// while the member keeps sending aborts the member's call, records no
// member failure and fails over to nobody (SPEC POOL-9, POOL-21).
func TestTranslatedClientGone(t *testing.T) {
	var w *world
	chatty := func(rw http.ResponseWriter, r *http.Request, _ int) {
		sseHead(rw)
		messageStart(rw, "a", nil)
		textDelta(rw, "partial")
		for r.Context().Err() == nil {
			textDelta(rw, "more")
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Millisecond):
			}
		}
		w.mocks["a"].ctxDone <- "a"
	}
	w = newWorld(t, []string{"a", "b"}, []behaviour{chatty, okAnswer("b")}, "", Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp := w.do(ctx, "/pool/p/v1/chat/completions", map[string]string{"X-Claude-Code-Session-Id": "c"}, chatStreamBody)
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended before the delta: %v", err)
		}
		if strings.Contains(line, `"content":"partial"`) {
			break
		}
	}
	cancel()
	resp.Body.Close()
	t.Run("POOL-9/translated-client-gone-aborts-member", func(t *testing.T) { w.checkClientGone(t) })
}

// TestTranslatedMemberStall: a member that stalls after the commit point
// of a translated stream gives the Chat client the error chunk (not a
// [DONE]) after stream_idle_timeout_ms, and the failure is the member's
// (SPEC POOL-7, POOL-21).
func TestTranslatedMemberStall(t *testing.T) {
	var w *world
	stall := func(rw http.ResponseWriter, r *http.Request, _ int) {
		sseHead(rw)
		messageStart(rw, "a", nil)
		textDelta(rw, "first")
		w.mocks["a"].waitCtx(r)
	}
	w = newWorld(t, []string{"a"}, []behaviour{stall}, "    stream_idle_timeout_ms: 200\n", Options{PingInterval: 50 * time.Millisecond})
	resp := w.do(context.Background(), "/pool/p/v1/chat/completions", map[string]string{"X-Claude-Code-Session-Id": "st"}, chatStreamBody)
	var body bytes.Buffer
	_, err := body.ReadFrom(resp.Body)
	resp.Body.Close()
	t.Run("POOL-7/translated-member-stall-error-chunk", func(t *testing.T) {
		got := body.String()
		if err != nil || !strings.Contains(got, `"content":"first"`) || !strings.Contains(got, `"error"`) || strings.Contains(got, "[DONE]") {
			t.Fatalf("err %v, stream:\n%s", err, got)
		}
		testkit.WaitFor(t, 5*time.Second, "call record", func() bool { return len(w.pool.Status().Recent) == 1 })
		if a := w.member("a"); a.Failures != 1 {
			t.Fatalf("the member's stall is not its failure: %+v", a)
		}
	})
}
