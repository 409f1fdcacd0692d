package pool

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/config"
)

// chunkBody is a member's streamed body that hands out one chunk per Read,
// as the chunks arrive on its channel (closed: EOF); a canceled request
// context ends a blocked Read, as net/http's body does.
type chunkBody struct {
	ctx    context.Context
	chunks chan string
}

func (b *chunkBody) Read(p []byte) (int, error) {
	select {
	case s, ok := <-b.chunks:
		if !ok {
			return 0, io.EOF
		}
		return copy(p, s), nil
	case <-b.ctx.Done():
		return 0, b.ctx.Err()
	}
}

func (b *chunkBody) Close() error { return nil }

// chunkChannel answers every call with a chunkBody fed from chunks.
type chunkChannel struct{ chunks chan string }

func (s chunkChannel) RoundTrip(r *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, r.Body)
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: &chunkBody{ctx: r.Context(), chunks: s.chunks}, Request: r}, nil
}

// flushRecorder is a ResponseWriter that records the bytes seen by the
// client at each Flush.
type flushRecorder struct {
	h       http.Header
	mu      sync.Mutex
	buf     bytes.Buffer
	flushed []string // the client's view after each flush
	status  int
}

func (w *flushRecorder) Header() http.Header { return w.h }
func (w *flushRecorder) WriteHeader(s int)   { w.status = s }
func (w *flushRecorder) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(b)
}
func (w *flushRecorder) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushed = append(w.flushed, w.buf.String())
}

// waitFlushed waits (at most 5 s) for a flush whose bytes contain s and
// returns the number of flushes so far.
func (w *flushRecorder) waitFlushed(t *testing.T, s string) int {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		w.mu.Lock()
		n := len(w.flushed)
		ok := n > 0 && strings.Contains(w.flushed[n-1], s)
		w.mu.Unlock()
		if ok {
			return n
		}
	}
	t.Fatalf("%q never flushed to the client", s)
	return 0
}

func anDelta(text string) string {
	return "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"" + text + "\"}}\n\n"
}

// TestStreamBatchesArrivedEvents: events that arrive in one read are
// written with one flush, and the last of them is flushed before the pool
// reads on (never held back waiting for the member); one goroutine serves
// the stream — no reader goroutine beside the handler. SPEC
// POOL-7: events are flushed as they arrive.
func TestStreamBatchesArrivedEvents(t *testing.T) {
	cfg, err := config.ParseConfig([]byte("channels:\n  an: {api: anthropic, base_url: 'http://127.0.0.1:9', api_key: sk-batch-key}\npools:\n  pa: {members: [an]}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	chunks := make(chan string)
	p := New(cfg, Options{Transport: chunkChannel{chunks}, Logger: discardLogger()})
	r, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/pool/pa/v1/messages", strings.NewReader(msgBody("m", true)))
	r.Header.Set("Content-Type", "application/json")
	w := &flushRecorder{h: http.Header{}}
	done := make(chan struct{})
	go func() { defer close(done); p.ServeHTTP(w, r) }()

	chunks <- "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" + anDelta("d0")
	before := w.waitFlushed(t, `"d0"`)
	t.Run("POOL-7/one-goroutine-per-stream", func(t *testing.T) {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		if n := strings.Count(stacks, "pool.(*attempt).stream("); n != 1 {
			t.Fatalf("%d goroutines in a streamed attempt for one stream, want 1:\n%s", n, stacks)
		}
	})
	chunks <- anDelta("d1") + anDelta("d2") + anDelta("d3") + anDelta("d4") + anDelta("d5")
	after := w.waitFlushed(t, `"d5"`) // the next Read blocks until the test sends more: d5 must be out already
	t.Run("POOL-7/arrived-together-one-flush", func(t *testing.T) {
		if after-before != 1 {
			t.Fatalf("5 events of one read took %d flushes, want 1", after-before)
		}
	})
	chunks <- "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":6}}\n\n"
	w.waitFlushed(t, "message_delta")
	chunks <- "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	close(chunks)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the call did not end after the stream's end")
	}
	t.Run("POOL-7/stream-intact", func(t *testing.T) {
		got := w.flushed[len(w.flushed)-1]
		for i, want := range []string{`"d0"`, `"d1"`, `"d2"`, `"d3"`, `"d4"`, `"d5"`, "message_delta", "message_stop"} {
			if !strings.Contains(got, want) {
				t.Fatalf("part %d (%s) missing from the client's stream:\n%s", i, want, got)
			}
		}
		if w.status != 200 {
			t.Fatalf("status %d", w.status)
		}
	})
}

// TestConcurrentStreamsKeepTheirOwnBytes: streams share their SSE read
// buffers (wire.SSEReader.Release). Of concurrent streams some clients leave
// mid-stream: every stream that stays gets only its own member's bytes
// (SPEC POOL-15, POOL-19) and the departures are cancelled (POOL-9).
func TestConcurrentStreamsKeepTheirOwnBytes(t *testing.T) {
	t.Run("POOL-19/concurrent-streams-with-departures-keep-their-own-bytes", func(t *testing.T) {
		markRe := regexp.MustCompile(`MARK-[0-9]+`)
		member := func(w http.ResponseWriter, r *http.Request, _ int) {
			mark := markRe.FindString(string(recordedBody(r)))
			sseHead(w)
			messageStart(w, mark, nil)
			for i := range 30 {
				textDelta(w, fmt.Sprintf("%s-%d:%s", mark, i, strings.Repeat(mark[5:6], 3000)))
				if r.Context().Err() != nil {
					return
				}
			}
			messageEnd(w)
		}
		w := newWorld(t, []string{"a"}, []behaviour{member}, "", Options{})
		const n = 16
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for k := range 3 {
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					mark := fmt.Sprintf("MARK-%d", k*n+i)
					body := fmt.Sprintf(`{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":%q}]}`, mark)
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					resp := w.do(ctx, "/pool/p/v1/messages", map[string]string{"X-Claude-Code-Session-Id": mark}, body)
					defer resp.Body.Close()
					br := bufio.NewReader(resp.Body)
					deltas := 0
					for {
						line, err := br.ReadString('\n')
						if err == io.EOF {
							break
						}
						if err != nil {
							if i%2 == 1 {
								return
							}
							errs <- fmt.Errorf("%s: %v", mark, err)
							return
						}
						data, ok := strings.CutPrefix(line, "data: ")
						if !ok {
							continue
						}
						var ev struct {
							Type  string `json:"type"`
							Delta struct {
								Text string `json:"text"`
							} `json:"delta"`
						}
						if err := json.Unmarshal([]byte(data), &ev); err != nil {
							errs <- fmt.Errorf("%s: bad event %q: %v", mark, data, err)
							return
						}
						if ev.Type != "content_block_delta" {
							continue
						}
						want := fmt.Sprintf("%s-%d:%s", mark, deltas, strings.Repeat(mark[5:6], 3000))
						if ev.Delta.Text != want {
							errs <- fmt.Errorf("%s: delta %d is %.40q", mark, deltas, ev.Delta.Text)
							return
						}
						deltas++
						if i%2 == 1 && deltas == 3 {
							cancel() // leaves mid-stream
							return
						}
					}
					if deltas != 30 {
						errs <- fmt.Errorf("%s: %d deltas, want 30", mark, deltas)
					}
				}()
			}
			wg.Wait()
		}
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
}
