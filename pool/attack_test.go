package pool

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestHostileMemberErrorBodies: a member that sends an error status and
// then stalls in its body, or sends an endless or gzip-bomb error body,
// costs one bounded attempt and a failover, never a hang (POOL-10,
// POOL-17).
func TestHostileMemberErrorBodies(t *testing.T) {
	stallBody := func(code int) behaviour {
		return func(w http.ResponseWriter, r *http.Request, _ int) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "1000")
			w.WriteHeader(code)
			io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"`)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}
	}
	endless := func(w http.ResponseWriter, r *http.Request, _ int) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(529)
		io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"`)
		chunk := []byte(strings.Repeat("x", 64<<10))
		for i := 0; i < 1<<11 && r.Context().Err() == nil; i++ { // at most 128 MiB
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}
	for _, tc := range []struct {
		name   string
		b      behaviour
		stream bool
	}{
		{"POOL-10/529-head-then-stalled-body-stream", stallBody(529), true},
		{"POOL-10/529-head-then-stalled-body-non-stream", stallBody(529), false},
		{"POOL-10/400-head-then-stalled-body-stream", stallBody(400), true},
		{"POOL-17/endless-529-body-stream", endless, true},
		{"POOL-17/endless-529-body-non-stream", endless, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, []string{"a", "b"}, []behaviour{tc.b, okAnswer("b")}, "    strategy: failover\n    first_output_timeout_ms: 500\n    response_timeout_ms: 500\n", Options{})
			start := time.Now()
			resp, body := w.call("s1", tc.stream)
			d := time.Since(start)
			if d > 8*time.Second {
				t.Fatalf("took %v", d)
			}
			if resp.StatusCode != 200 || !strings.Contains(body, "msg_b") {
				t.Fatalf("want b's answer after the failover: %d %.300s", resp.StatusCode, body)
			}
		})
	}
}

// TestAggregateStatusNeverSuccess: members that answer 200 with something
// the pool cannot use (a JSON document to a streaming request) failed; the
// aggregated error (SPEC POOL-11) must carry an error status, never the
// members' 200, or clients read the error document as an answer and do not
// retry.
func TestAggregateStatusNeverSuccess(t *testing.T) {
	jsonAnswer := func(w http.ResponseWriter, r *http.Request, _ int) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","type":"message","role":"assistant","content":[{"type":"text","text":"ok"}]}`)
	}
	for _, tc := range []struct {
		name string
		b    []behaviour
		want int
	}{
		{"POOL-11/unusable-200-answers-are-502", []behaviour{jsonAnswer, jsonAnswer}, 502},
		{"POOL-11/unusable-200-then-401-is-502-the-more-transient", []behaviour{jsonAnswer, statusAnswer(401, nil, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)}, 502},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, []string{"a", "b"}, tc.b, "    strategy: failover\n", Options{})
			resp, body := w.call("s1", true)
			if resp.StatusCode != tc.want || !strings.Contains(body, "all 2 attempted members failed") {
				t.Fatalf("client got %d (want %d): %.300s", resp.StatusCode, tc.want, body)
			}
		})
	}
}
