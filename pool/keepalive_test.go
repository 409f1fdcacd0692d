package pool

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestOwnPing(t *testing.T) {
	t.Run("POOL-7/own-ping-on-quiet-stream", func(t *testing.T) {
		quiet := func(w http.ResponseWriter, r *http.Request, _ int) {
			sseHead(w)
			messageStart(w, "a", nil)
			textDelta(w, "first")
			select {
			case <-time.After(400 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
			textDelta(w, "second")
			messageEnd(w)
		}
		w := newWorld(t, []string{"a"}, []behaviour{quiet}, "", Options{PingInterval: 50 * time.Millisecond})
		_, body := w.call("q", true)
		evs := events(body)
		// One ping from upstream's preamble, at least one of ours in the gap.
		if count(evs, "ping") < 2 || count(evs, "message_stop") != 1 {
			t.Fatalf("events %v", evs)
		}
		iFirst, iSecond := strings.Index(body, "first"), strings.Index(body, "second")
		if !strings.Contains(body[iFirst:iSecond], "event: ping") {
			t.Fatalf("no ping between the deltas: %q", body)
		}
	})
	t.Run("POOL-7/idle-after-commit-becomes-error-event", func(t *testing.T) {
		var w *world
		stall := func(rw http.ResponseWriter, r *http.Request, _ int) {
			sseHead(rw)
			messageStart(rw, "a", nil)
			textDelta(rw, "first")
			w.mocks["a"].waitCtx(r)
		}
		w = newWorld(t, []string{"a"}, []behaviour{stall}, "    stream_idle_timeout_ms: 200\n", Options{PingInterval: 50 * time.Millisecond})
		_, body := w.call("idle", true)
		evs := events(body)
		if evs[len(evs)-1] != "error" || count(evs, "message_stop") != 0 || !strings.Contains(body, "timeout_error") {
			t.Fatalf("events %v", evs)
		}
	})
}

func TestPreambleCap(t *testing.T) {
	t.Run("POOL-7/preamble-over-256KiB-commits", func(t *testing.T) {
		var w *world
		chatty := func(rw http.ResponseWriter, r *http.Request, _ int) {
			sseHead(rw)
			messageStart(rw, "a", nil)
			pad := strings.Repeat("x", 1024)
			for i := 0; i < 300; i++ {
				fmt.Fprintf(rw, ": %s\n\n", pad)
			}
			rw.(http.Flusher).Flush()
			w.mocks["a"].waitCtx(r)
		}
		w = newWorld(t, []string{"a", "b"}, []behaviour{chatty, okAnswer("b")}, "", Options{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		resp := w.do(ctx, "/pool/p/v1/messages", map[string]string{"X-Session-Id": "cap"}, msgBody("m", true))
		defer resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("X-Pool-Member") != "a" {
			t.Fatalf("%d %v", resp.StatusCode, resp.Header)
		}
		n, _ := io.CopyN(io.Discard, resp.Body, 256<<10)
		if n != 256<<10 {
			t.Fatalf("read %d", n)
		}
		cancel()
	})
}
