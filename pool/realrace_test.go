package pool_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// raceFigures are the outcomes of a run of sequential calls of one session
// against channels that close kept-alive connections on their own: calls
// that failed, and calls answered by another member than the one before
// (binding moves) or after more than one attempt (failovers).
type raceFigures struct {
	calls, failed, moves, failovers int
}

func (f raceFigures) String() string {
	return fmt.Sprintf("%d calls: %d failed, %d binding moves, %d failovers", f.calls, f.failed, f.moves, f.failovers)
}

// runCalls makes n sequential calls of session s1 to pool p, pacing them
// by pace(i) (zero: back to back).
func runCalls(t *testing.T, w *rworld, n int, pace func(i int) time.Duration) raceFigures {
	t.Helper()
	f := raceFigures{calls: n}
	last := ""
	for i := range n {
		if d := pace(i); d > 0 {
			<-time.After(d) // the scenario's pacing: the gap the channel's idle timeout races
		}
		resp, body := w.do("/pool/p/v1/messages", "s1", anthropicBody(i%2 == 0))
		if resp.StatusCode != 200 || !strings.Contains(body, "hi from") {
			f.failed++
			continue
		}
		m := resp.Header.Get("X-Pool-Member")
		if last != "" && m != last {
			f.moves++
		}
		if resp.Header.Get("X-Pool-Attempts") != "1" {
			f.failovers++
		}
		last = m
	}
	return f
}

// idleTimeoutServer is a channel (okChannel's answers) whose server closes
// a kept-alive connection idle for idle, as production servers do, without
// saying so on the answer before.
func idleTimeoutServer(t *testing.T, idle time.Duration) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		okChannel("a")(w, r, 0, body)
	}))
	srv.Config.IdleTimeout = idle
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// raceIdle is the idle timeout of the idle-timeout scenarios: short, so
// the suite stays quick; the race is the same at any length.
const raceIdle = 100 * time.Millisecond

// racePace sweeps the gap between calls across the channel's idle timeout
// (± 2 ms in 0.5 ms steps), where a request meets the channel's close.
func racePace(i int) time.Duration {
	return raceIdle - 2*time.Millisecond + time.Duration(i%9)*500*time.Microsecond
}

// racePool is a world whose pool p has members (1 or 2) on one channel at
// base: members on one host share its connections' fate.
func racePool(t *testing.T, base string, members int) *rworld {
	t.Helper()
	w := newRWorld(t, rconf{}, []string{"unused"}, okChannel("unused"))
	y := "channels:\n  a: {api: anthropic, base_url: \"" + base + "\", api_key: sk-test-a-0123456789}\n"
	list := "[a]"
	if members == 2 {
		y += "  b: {api: anthropic, base_url: \"" + base + "\", api_key: sk-test-b-0123456789}\n"
		list = "[a, b]"
	}
	reload(t, w, y+"pools:\n  p:\n    members: "+list+"\n")
	return w
}

// TestIdleRaceFigures: channels that close kept-alive connections on
// their own, with no "Connection: close" on the answer before, cost no
// call and move no session (SPEC POOL-26): a channel that closes every
// connection right after its answer, one with a short idle timeout met by
// calls paced around it, and two members on one host that close after
// every answer. The figures are logged.
func TestIdleRaceFigures(t *testing.T) {
	check := func(t *testing.T, f raceFigures) {
		t.Helper()
		t.Log(f)
		if f.failed != 0 || f.moves != 0 || f.failovers != 0 {
			t.Errorf("%v, want every call answered by the bound member at the first attempt", f)
		}
	}
	t.Run("POOL-26/close-after-each-answer-costs-no-call", func(t *testing.T) {
		t.Parallel()
		ch := newCloseNowChannel(t)
		w := racePool(t, "http://"+ch.ln.Addr().String(), 1)
		check(t, runCalls(t, w, 150, func(int) time.Duration { return 0 }))
	})
	t.Run("POOL-26/short-idle-timeout-costs-no-call", func(t *testing.T) {
		t.Parallel()
		srv := idleTimeoutServer(t, raceIdle)
		w := racePool(t, srv.URL, 1)
		check(t, runCalls(t, w, 40, racePace))
	})
	t.Run("POOL-26/two-members-on-one-host-no-needless-failover", func(t *testing.T) {
		t.Parallel()
		ch := newCloseNowChannel(t)
		w := racePool(t, "http://"+ch.ln.Addr().String(), 2)
		check(t, runCalls(t, w, 50, func(int) time.Duration { return 0 }))
	})
	t.Run("POOL-26/fin-as-the-next-request-comes-costs-no-call", func(t *testing.T) {
		t.Parallel()
		ch := newHalfClosingChannel(t)
		w := racePool(t, "http://"+ch.ln.Addr().String(), 1)
		check(t, runCalls(t, w, 150, func(int) time.Duration { return 0 }))
	})
	t.Run("POOL-26/two-members-on-one-host-fin-as-the-next-request-comes", func(t *testing.T) {
		t.Parallel()
		ch := newHalfClosingChannel(t)
		w := racePool(t, "http://"+ch.ln.Addr().String(), 2)
		check(t, runCalls(t, w, 50, func(int) time.Duration { return 0 }))
	})
	t.Run("POOL-26/two-members-on-one-host-with-idle-timeout", func(t *testing.T) {
		t.Parallel()
		srv := idleTimeoutServer(t, raceIdle)
		w := racePool(t, srv.URL, 2)
		check(t, runCalls(t, w, 50, racePace))
	})
}
