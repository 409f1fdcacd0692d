package main

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/pool"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// startStreamWorld runs scenario 7's mock channel, an in-process pool with
// one member per API (served by httptest: the harness, not dual-proxy's
// listener, is under test here) and the reference relay, all stopped by
// t.Cleanup.
func startStreamWorld(t *testing.T) (mock *streamMock, poolAddr, relayAddr string) {
	t.Helper()
	mock, err := newStreamMock("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(mock.close)
	cfg, err := config.ParseConfig([]byte(fmt.Sprintf("channels:\n  an: {api: anthropic, base_url: 'http://%[1]s', api_key: sk-bench-anthropic-key}\n"+
		"  ch: {api: openai-chat, base_url: 'http://%[1]s/v1', api_key: sk-bench-chat-key}\npools:\n  pa: {members: [an]}\n  pc: {members: [ch]}\n", mock.addr())), nil)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	ps := httptest.NewServer(pool.New(cfg, pool.Options{Transport: tr, Logger: slog.New(slog.DiscardHandler)}))
	t.Cleanup(tr.CloseIdleConnections)
	t.Cleanup(ps.Close)
	srv, ln, err := newSSERelay(mock.addr())
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return mock, strings.TrimPrefix(ps.URL, "http://"), ln.Addr().String()
}

// TestPoolStreamHarness: scenario 7's client reads every stamped delta and
// the end event of both APIs, directly, through the pool (same API and
// translated both ways: the stamps survive translation) and through the
// reference relay; keep-alive connections carry a second stream.
func TestPoolStreamHarness(t *testing.T) {
	mock, pa, relay := startStreamWorld(t)
	for _, tc := range []struct {
		name string
		t    streamTarget
	}{
		{"POOL-7/direct-anthropic", streamTarget{mock.addr(), "/v1/messages", apiAnthropic}},
		{"POOL-7/direct-chat", streamTarget{mock.addr(), "/v1/chat/completions", apiChat}},
		{"POOL-7/pool-same-api-pass-through", streamTarget{pa, "/pool/pa/v1/messages", apiAnthropic}},
		{"POOL-21/pool-anthropic-client-chat-member", streamTarget{pa, "/pool/pc/v1/messages", apiAnthropic}},
		{"POOL-21/pool-chat-client-anthropic-member", streamTarget{pa, "/pool/pa/v1/chat/completions", apiChat}},
		{"POOL-7/reference-relay", streamTarget{relay, "/v1/messages", apiAnthropic}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sc streamConn
			defer sc.close()
			req := append(tc.t.head(len(tc.t.body()), "test"), tc.t.body()...)
			var delays []time.Duration
			for i := 0; i < 2; i++ {
				r, err := tc.t.stream(&sc, req, delays)
				if err != nil {
					t.Fatalf("stream %d: %v", i, err)
				}
				if len(r.delays) != (i+1)*poolEvents {
					t.Fatalf("stream %d: %d delays", i, len(r.delays))
				}
				// Sanity bounds, wide for a loaded CI box under -race: a
				// clock that is not shared is off by far more.
				if r.ttft < poolFirst || r.ttft > poolStreamLen+10*time.Second {
					t.Fatalf("stream %d: TTFT %v outside [%v, %v]", i, r.ttft, poolFirst, poolStreamLen+10*time.Second)
				}
				for _, d := range r.delays {
					if d < 0 || d > 10*time.Second {
						t.Fatalf("stream %d: event delay %v (clock not shared?)", i, d)
					}
				}
				delays = r.delays
			}
		})
	}
}

// TestRunStreamsRound: a short round at 4 streams measures TTFTs and
// delays, and counts every delta of the round (CPU per event) without
// failures.
func TestRunStreamsRound(t *testing.T) {
	mock, _, relay := startStreamWorld(t)
	for _, addr := range []string{mock.addr(), relay} {
		// 2 s of measured streams (each 250 ms): under a loaded CI box a
		// shorter window could end before any warm-up stream did.
		r := runStreams(streamTarget{addr, "/v1/messages", apiAnthropic}, 4, 2*time.Second)
		if r.errs != 0 || len(r.ttft) == 0 || len(r.delays) != len(r.ttft)*poolEvents || r.events < len(r.delays) {
			t.Fatalf("%s: errs %d (%v), %d TTFTs, %d delays, %d events", addr, r.errs, r.lastErr, len(r.ttft), len(r.delays), r.events)
		}
	}
}

// TestStreamMockRefusesOtherPaths: the mock channel answers 404 to a path
// of no API it speaks (so a wrong member path fails the check stream).
func TestStreamMockRefusesOtherPaths(t *testing.T) {
	mock, err := newStreamMock("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer mock.close()
	c, err := net.Dial("tcp", mock.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, "POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
	status, _, err := readResponse(bufio.NewReader(c))
	if err != nil || status != 404 {
		t.Fatalf("status %d, %v", status, err)
	}
}
