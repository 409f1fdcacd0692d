package pool

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/config"
)

// encodedAnswer answers like okAnswer("a"), but compressed with coding and
// labelled with it, whether or not the request asked for it.
func encodedAnswer(coding string) behaviour {
	return func(w http.ResponseWriter, r *http.Request, _ int) {
		var body struct {
			Stream bool `json:"stream"`
		}
		_ = json.Unmarshal(recordedBody(r), &body)
		rec := httptest.NewRecorder()
		okAnswer("a")(rec, r, 0)
		plain := rec.Body.Bytes()
		var buf bytes.Buffer
		var zw io.WriteCloser
		switch coding {
		case "gzip":
			zw = gzip.NewWriter(&buf)
		case "deflate":
			zw, _ = zlib.NewWriterLevel(&buf, zlib.DefaultCompression)
		case "deflate-raw":
			zw, _ = flate.NewWriter(&buf, flate.DefaultCompression)
		default: // an unreadable coding: opaque bytes
			buf.WriteString("\x0b\x01\x80opaque-" + coding)
		}
		if zw != nil {
			_, _ = zw.Write(plain)
			_ = zw.Close()
		}
		w.Header().Set("Content-Type", rec.Header().Get("Content-Type"))
		w.Header().Set("Content-Encoding", strings.TrimSuffix(coding, "-raw"))
		w.WriteHeader(200)
		_, _ = w.Write(buf.Bytes())
	}
}

// TestUnrequestedContentEncoding: an answer encoded although the pool did
// not ask (or its Transport does not decode) is decoded before inspection
// and forwarding, never passed as raw bytes with the header removed
// (SPEC POOL-7: the pool reads every answer; RFC 9110 §8.4).
func TestUnrequestedContentEncoding(t *testing.T) {
	for _, coding := range []string{"gzip", "deflate", "deflate-raw"} {
		for _, stream := range []bool{true, false} {
			name := "POOL-7/" + coding + map[bool]string{true: "-stream", false: "-plain"}[stream]
			t.Run(name, func(t *testing.T) {
				// DisableCompression: the Transport neither asks for gzip nor
				// decodes it, like a custom upstream RoundTripper.
				tr := &http.Transport{DisableCompression: true}
				t.Cleanup(tr.CloseIdleConnections)
				w := newWorld(t, []string{"a", "b"}, []behaviour{encodedAnswer(coding), okAnswer("b")}, "    strategy: failover\n", Options{Transport: tr})
				resp, body := w.call("s", stream)
				if resp.StatusCode != 200 || resp.Header.Get("X-Pool-Member") != "a" {
					t.Fatalf("status %d member %q body %q", resp.StatusCode, resp.Header.Get("X-Pool-Member"), body)
				}
				if ce := resp.Header.Get("Content-Encoding"); ce != "" {
					t.Fatalf("Content-Encoding %q left on a decoded body", ce)
				}
				if !strings.Contains(body, "hi from a") {
					t.Fatalf("body not decoded: %q", body)
				}
				if stream && count(events(body), "message_stop") != 1 {
					t.Fatalf("stream events %v", events(body))
				}
			})
		}
	}
	t.Run("POOL-7/unreadable-coding-plain-passed-intact", func(t *testing.T) {
		w := newWorld(t, []string{"a"}, []behaviour{encodedAnswer("br")}, "", Options{})
		resp, body := w.call("s", false)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "br" || body != "\x0b\x01\x80opaque-br" {
			t.Fatalf("status %d CE %q body %q: want bytes and header intact", resp.StatusCode, resp.Header.Get("Content-Encoding"), body)
		}
	})
	t.Run("POOL-7/unreadable-coding-stream-fails-over", func(t *testing.T) {
		w := newWorld(t, []string{"a", "b"}, []behaviour{encodedAnswer("br"), okAnswer("b")}, "    strategy: failover\n", Options{})
		resp, body := w.call("s", true)
		if resp.StatusCode != 200 || resp.Header.Get("X-Pool-Member") != "b" || w.member("a").CooldownClass != config.ClassServer {
			t.Fatalf("status %d member %q body %q", resp.StatusCode, resp.Header.Get("X-Pool-Member"), body)
		}
	})
}

// TestEventStreamWithoutContentType: a streaming answer sent without the
// text/event-stream Content-Type is still relayed as a stream, event by
// event, not buffered whole or refused (SPEC POOL-7).
func TestEventStreamWithoutContentType(t *testing.T) {
	for _, ct := range []string{"", "text/plain; charset=utf-8", "application/octet-stream"} {
		t.Run("POOL-7/content-type="+ct, func(t *testing.T) {
			release := make(chan struct{})
			noCT := func(w http.ResponseWriter, r *http.Request, _ int) {
				if ct == "" {
					w.Header()["Content-Type"] = nil // no Content-Type at all
				} else {
					w.Header().Set("Content-Type", ct)
				}
				w.WriteHeader(200)
				_, _ = io.WriteString(w, "\n: keepalive\n\n")
				w.(http.Flusher).Flush()
				messageStartNoHead(w)
				textDelta(w, "first words")
				select { // hold the end until the client saw the first delta
				case <-release:
				case <-r.Context().Done():
					return
				case <-time.After(10 * time.Second):
				}
				messageEnd(w)
			}
			w := newWorld(t, []string{"a", "b"}, []behaviour{noCT, okAnswer("b")}, "    strategy: failover\n    first_output_timeout_ms: 5000\n", Options{})
			resp := w.do(t.Context(), "/pool/p/v1/messages", nil, msgBody("m", true))
			defer resp.Body.Close()
			if resp.StatusCode != 200 || resp.Header.Get("X-Pool-Member") != "a" || resp.Header.Get("Content-Type") != "text/event-stream" {
				close(release)
				t.Fatalf("status %d member %q ct %q", resp.StatusCode, resp.Header.Get("X-Pool-Member"), resp.Header.Get("Content-Type"))
			}
			var got strings.Builder
			buf := make([]byte, 4096)
			for !strings.Contains(got.String(), "first words") {
				n, err := resp.Body.Read(buf)
				got.Write(buf[:n])
				if err != nil {
					close(release)
					t.Fatalf("stream ended before the first delta: %v %q", err, got.String())
				}
			}
			close(release) // the first delta arrived while the upstream still held the end
			rest, _ := io.ReadAll(resp.Body)
			got.Write(rest)
			if count(events(got.String()), "message_stop") != 1 {
				t.Fatalf("events %v", events(got.String()))
			}
		})
	}
}

// messageStartNoHead writes message_start and an empty block start without
// touching the response head.
func messageStartNoHead(w http.ResponseWriter) {
	sseWrite(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_a", "type": "message", "role": "assistant", "content": []any{}, "usage": map[string]any{"input_tokens": 1}}})
	sseWrite(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0,
		"content_block": map[string]any{"type": "text", "text": ""}})
}
