package pool

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/balance"
	"github.com/dual-proxy/dual-proxy/pool/config"
	"github.com/dual-proxy/dual-proxy/pool/status"
)

func TestKeysNeverLeak(t *testing.T) {
	t.Run("POOL-15/key-absent-from-logs-status-errors-redacted", func(t *testing.T) {
		echo401 := func(w http.ResponseWriter, r *http.Request, _ int) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(401)
			fmt.Fprintf(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key %s"}}`, r.Header.Get("X-Api-Key"))
		}
		echoEvent := func(w http.ResponseWriter, r *http.Request, _ int) {
			sseHead(w)
			messageStart(w, "b", nil)
			sseWrite(w, "error", map[string]any{"type": "error", "error": map[string]any{"type": "overloaded_error", "message": "key " + r.Header.Get("X-Api-Key") + " overloaded"}})
		}
		w := newWorld(t, []string{"a", "b"}, []behaviour{echo401, echoEvent}, "", Options{})
		var seen strings.Builder
		for i := 0; i < 3; i++ {
			resp, body := w.call(fmt.Sprintf("leak%d", i), i != 1)
			fmt.Fprintf(&seen, "%v\n%s\n", resp.Header, body)
		}
		// A post-commit failure echoing the key.
		w.mocks["a"].set(func(rw http.ResponseWriter, r *http.Request, _ int) {
			sseHead(rw)
			messageStart(rw, "a", nil)
			textDelta(rw, "x")
			sseWrite(rw, "error", map[string]any{"type": "error", "error": map[string]any{"type": "api_error", "message": "oops " + r.Header.Get("X-Api-Key")}})
		})
		w.pool.state.Succeed(context.Background(), "a")
		w.pool.state.Succeed(context.Background(), "b")
		_, body := w.call("leak-post", true)
		seen.WriteString(body)
		st, _ := json.Marshal(w.pool.Status())
		cfg, _ := w.pool.config()
		all := seen.String() + "\n" + w.logs.String() + "\n" + string(st) + "\n" + cfg.Redacted()
		if !strings.Contains(w.logs.String(), "pool member failed") {
			t.Fatalf("no failure logs captured: %s", w.logs.String())
		}
		if strings.Contains(all, "SECRET") {
			t.Fatalf("key leaked:\n%s", all)
		}
		// The message is kept, with the key scrubbed.
		if !strings.Contains(seen.String(), "invalid x-api-key ***") {
			t.Fatalf("scrubbed message missing:\n%s", seen.String())
		}
	})
}

// TestEchoedKeysScrubbed: an upstream that echoes its key in a response
// header, in a preamble event, in the visible event or in a later event must
// not hand it to the client (SPEC POOL-15).
func TestEchoedKeysScrubbed(t *testing.T) {
	echo := func(w http.ResponseWriter, r *http.Request, _ int) {
		key := r.Header.Get("X-Api-Key")
		w.Header().Set("X-Echo-Key", "got "+key)
		w.Header().Add("X-Echo-Key", key)
		var body struct {
			Stream bool `json:"stream"`
		}
		_ = json.Unmarshal(recordedBody(r), &body)
		if !body.Stream {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"type":"message","content":[{"type":"text","text":"k=%s"}]}`, key)
			return
		}
		sseHead(w)
		sseWrite(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": key, "usage": map[string]any{}}})
		fmt.Fprintf(w, ": comment %s\n\n", key)
		textDelta(w, "visible "+key)
		textDelta(w, "later "+key)
		messageEnd(w)
	}
	w := newWorld(t, []string{"a"}, []behaviour{echo}, "", Options{})
	for _, stream := range []bool{true, false} {
		t.Run(fmt.Sprintf("POOL-15/stream=%v", stream), func(t *testing.T) {
			resp, body := w.call("echo", stream)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d %s", resp.StatusCode, body)
			}
			all := fmt.Sprintf("%v\n%s", resp.Header, body)
			if strings.Contains(all, "SECRET") {
				t.Fatalf("key leaked:\n%s", all)
			}
			if got := resp.Header.Values("X-Echo-Key"); len(got) != 2 || got[0] != "got ***" || got[1] != "***" {
				t.Fatalf("X-Echo-Key %q, want scrubbed values kept", got)
			}
			if stream && (!strings.Contains(body, `"id":"***"`) || !strings.Contains(body, "later ***") || !strings.Contains(body, ": comment ***")) {
				t.Fatalf("events not relayed with the key scrubbed:\n%s", body)
			}
		})
	}
}

func TestCacheStats(t *testing.T) {
	t.Run("POOL-13b/cache-hit-ratio-per-session-and-member", func(t *testing.T) {
		w := newWorld(t, []string{"a"}, []behaviour{okAnswer("a")}, "", Options{})
		w.call("cs", true)  // input 10, cache_read 30
		w.call("cs", false) // input 5, cache_read 15
		st := w.pool.Status()
		want := 45.0 / 60.0
		if len(st.Sessions) != 1 || math.Abs(st.Sessions[0].Cache.HitRatio-want) > 1e-9 {
			t.Fatalf("sessions %+v", st.Sessions)
		}
		if m := st.Pools[0].Members[0]; math.Abs(m.Cache.HitRatio-want) > 1e-9 || m.Successes != 2 || m.BoundSessions != 1 {
			t.Fatalf("member %+v", m)
		}
		if len(st.Recent) != 2 || st.Recent[0].Session != balance.SessionHash("cs") || st.Recent[0].Member != "a" || st.Recent[0].Model != "m" {
			t.Fatalf("recent %+v", st.Recent)
		}
	})
}

func TestPoolCooldownOverride(t *testing.T) {
	t.Run("POOL-10/per-pool-cooldown-override", func(t *testing.T) {
		w := newWorld(t, []string{"a", "b"}, []behaviour{statusAnswer(500, nil, `{}`), okAnswer("b")}, "    cooldown: {server_ms: 5000}\n", Options{})
		w.call("o", true)
		a := w.member("a")
		if a.CooldownUntil == nil || !a.CooldownUntil.Equal(w.now.Now().Add(5*time.Second)) || a.CooldownClass != config.ClassServer {
			t.Fatalf("a = %+v", a)
		}
		w.now.Advance(5 * time.Second)
		if a := w.member("a"); a.State != "ready" {
			t.Fatalf("a after override = %+v", a)
		}
	})
}

// TestStatusSessionsCapped: /pool/status lists at most the 1000 most
// recently used sessions and says how many there are (SPEC POOL-13).
func TestStatusSessionsCapped(t *testing.T) {
	w := newWorld(t, []string{"a"}, []behaviour{okAnswer("a")}, "", Options{})
	cfg, _ := w.pool.config()
	pc := cfg.Pool("p")
	t0 := w.now.Now()
	const n = status.MaxStatusSessions + 5
	for i := 0; i < n; i++ {
		w.pool.state.Bind(context.Background(), pc, balance.BindKey{Pool: "p", Session: fmt.Sprintf("s%04d", i), Model: "m"}, "a", t0.Add(time.Duration(i)*time.Millisecond))
	}
	w.now.Advance(time.Second)
	st := w.pool.Status()
	t.Run("POOL-13/sessions-capped-with-total", func(t *testing.T) {
		if len(st.Sessions) != status.MaxStatusSessions || st.SessionsTotal != n {
			t.Fatalf("sessions %d total %d", len(st.Sessions), st.SessionsTotal)
		}
		listed := map[string]bool{}
		for _, s := range st.Sessions {
			listed[s.Session] = true
		}
		for i := 0; i < n; i++ {
			if want := i >= 5; listed[balance.SessionHash(fmt.Sprintf("s%04d", i))] != want {
				t.Fatalf("session %d listed=%v, want the most recent %d", i, !want, status.MaxStatusSessions)
			}
		}
		b, _ := json.Marshal(st)
		if !strings.Contains(string(b), fmt.Sprintf(`"sessions_total":%d`, n)) {
			t.Fatal("sessions_total missing from the JSON")
		}
	})
}
