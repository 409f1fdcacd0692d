package engine_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
	"github.com/dual-proxy/dual-proxy/proxy"
	"github.com/dual-proxy/dual-proxy/proxy/engine"
	"github.com/dual-proxy/dual-proxy/proxy/statusdoc"
)

// newAPIEngine returns an engine over a refused gateway, a working gateway
// and direct (loopback goes through gateways: LoopbackDirect off), closed
// by t.Cleanup.
func newAPIEngine(t *testing.T, cfg engine.Config) (*engine.Engine, *testworld.Gateway, string) {
	t.Helper()
	gw := testworld.NewGateway(t)
	dead := testworld.RefusedAddr(t)
	cfg.Candidates = proxytest.Gateways(t, true, dead, gw.Addr)
	if cfg.Cooldown == 0 {
		cfg.Cooldown = 30 * time.Second
	}
	e, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e, gw, dead
}

func TestDialContext(t *testing.T) {
	t.Run("OPS-4/dead-gateway-then-working-gateway", func(t *testing.T) {
		e, gw, dead := newAPIEngine(t, engine.Config{})
		echo := proxytest.TCPServer(t, "127.0.0.1:0", func(c net.Conn) { io.Copy(c, c) })
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := e.DialContext(ctx, "tcp", echo)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(conn, "hello")
		b := make([]byte, 5)
		if _, err := io.ReadFull(conn, b); err != nil || string(b) != "hello" {
			t.Fatalf("echo: %q %v", b, err)
		}
		if gw.Connects() != 1 {
			t.Errorf("working gateway saw %d CONNECTs", gw.Connects())
		}
		ds := e.Decisions()
		if len(ds) != 1 || ds[0].Kind != "connect" || ds[0].Candidate != "http://"+gw.Addr || len(ds[0].Failed) != 1 || ds[0].Failed[0].Candidate != "http://"+dead {
			t.Fatalf("decisions %+v", ds)
		}
	})
	t.Run("OPS-4/state-shared-with-server", func(t *testing.T) {
		e, gw, _ := newAPIEngine(t, engine.Config{})
		origin := testworld.NewOrigin(t)
		conn, err := e.DialContext(context.Background(), "tcp4", origin.Addr)
		if err != nil {
			t.Fatal(err)
		}
		conn.Close()
		// A server on the same engine: the dead gateway is cooling and the
		// host is cached, so its plain request goes straight to the gateway.
		srv := proxy.NewWithEngine(e)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { srv.Serve(ln); close(done) }()
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
			defer cancel()
			srv.Shutdown(ctx)
			<-done
		}()
		resp, body := proxiedGet(t, ln.Addr().String(), origin.URL+"/x")
		if resp.StatusCode != 200 || body != origin.Greeting() || gw.Requests() != 1 {
			t.Fatalf("through server: %d %q, gateway requests %d", resp.StatusCode, body, gw.Requests())
		}
		ds := srv.Status().Decisions
		if len(ds) != 2 || ds[1].Kind != "http" || len(ds[1].Failed) != 0 || ds[1].Candidate != "http://"+gw.Addr {
			t.Fatalf("server decision after dial %+v", ds)
		}
	})
	t.Run("OPS-4/bad-network-and-address", func(t *testing.T) {
		e, _, _ := newAPIEngine(t, engine.Config{})
		for _, tc := range [][2]string{{"udp", "127.0.0.1:53"}, {"tcp", "127.0.0.1"}, {"tcp", "127.0.0.1:0"}, {"tcp", "bad host!:80"}} {
			if c, err := e.DialContext(context.Background(), tc[0], tc[1]); err == nil {
				c.Close()
				t.Errorf("%s %s: no error", tc[0], tc[1])
			} else if _, ok := err.(*net.OpError); !ok {
				t.Errorf("%s %s: %T %v, want *net.OpError", tc[0], tc[1], err, err)
			}
		}
	})
	t.Run("OPS-4/all-failed-error", func(t *testing.T) {
		e, err := engine.New(engine.Config{Candidates: proxytest.Gateways(t, false, testworld.RefusedAddr(t))})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		_, err = e.DialContext(context.Background(), "tcp", "127.0.0.1:9")
		var af *engine.AllFailedError
		if !errors.As(err, &af) || af.Host != "127.0.0.1" {
			t.Fatalf("err %T %v", err, err)
		}
	})
}

// proxiedGet sends GET target through the proxy at addr.
func proxiedGet(t *testing.T, addr, target string) (*http.Response, string) {
	t.Helper()
	c := proxytest.Dial(t, addr)
	io.WriteString(c, "GET "+target+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	return proxytest.ReadResponse(t, bufio.NewReader(c), "GET")
}

func TestTransport(t *testing.T) {
	t.Run("OPS-4/http-post-replayed-past-dead-gateway-hop-by-hop-removed", func(t *testing.T) {
		e, gw, _ := newAPIEngine(t, engine.Config{})
		origin := testworld.NewOrigin(t)
		client := &http.Client{Transport: e.RoundTripper(), Timeout: 10 * time.Second}
		defer client.CloseIdleConnections()
		req, _ := http.NewRequest("POST", origin.URL+"/submit?q=1", strings.NewReader("payload"))
		req.Header.Set("Connection", "X-Hop")
		req.Header.Set("X-Hop", "1")
		req.Header.Set("Keep-Alive", "timeout=5")
		req.Header.Set("X-End", "kept")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != origin.Greeting() || resp.Request == nil || resp.Request.Method != "POST" {
			t.Fatalf("%d %q", resp.StatusCode, body)
		}
		seen := origin.Requests()
		if len(seen) != 1 || seen[0].Method != "POST" || string(seen[0].Body) != "payload" || seen[0].RequestURI != "/submit?q=1" || seen[0].Host != origin.Addr {
			t.Fatalf("origin saw %+v", seen)
		}
		h := seen[0].Header
		if h.Get("X-Hop") != "" || h.Get("Keep-Alive") != "" || h.Get("X-End") != "kept" {
			t.Errorf("origin headers %v", h)
		}
		if gw.Requests() != 1 {
			t.Errorf("gateway requests %d", gw.Requests())
		}
		ds := e.Decisions()
		if len(ds) != 1 || ds[0].Kind != "http" || len(ds[0].Failed) != 1 || ds[0].Failed[0].Phase != "gateway-connect" {
			t.Errorf("decisions %+v", ds)
		}
	})
	t.Run("OPS-4/https-end-to-end-tls-over-selected-path", func(t *testing.T) {
		e, gw, _ := newAPIEngine(t, engine.Config{})
		origin := testworld.NewTLSOrigin(t)
		tr := &engine.Transport{Engine: e, TLSClientConfig: &tls.Config{RootCAs: origin.CertPool}}
		client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
		defer client.CloseIdleConnections()
		for i := 0; i < 2; i++ {
			resp, err := client.Get(origin.URL + "/secure")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(body) != origin.Greeting() || resp.TLS == nil {
				t.Fatalf("%d %q tls %v", resp.StatusCode, body, resp.TLS != nil)
			}
		}
		if gw.Connects() != 1 {
			t.Errorf("gateway CONNECTs %d, want 1 (second request reuses the tunnel)", gw.Connects())
		}
		st := e.Status()
		if len(st.Cache) != 1 || st.Cache[0].Candidate != "http://"+gw.Addr || st.Candidates[0].State != statusdoc.StateCooling {
			t.Errorf("shared state after https: cache %+v candidates %+v", st.Cache, st.Candidates)
		}
	})
	t.Run("OPS-4/large-body-streamed-once", func(t *testing.T) {
		gw := testworld.NewGateway(t)
		sums := make(chan [32]byte, 1)
		origin := testworld.NewOriginHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			sums <- sha256.Sum256(b)
		}))
		e, err := engine.New(engine.Config{Candidates: proxytest.Gateways(t, false, gw.Addr)})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		big := bytes.Repeat([]byte("0123456789abcdef"), (engine.MaxReplayBody+1<<20)/16)
		req, _ := http.NewRequest("PUT", origin.URL+"/big", bytes.NewReader(big))
		client := &http.Client{Transport: e.RoundTripper(), Timeout: 30 * time.Second}
		defer client.CloseIdleConnections()
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || <-sums != sha256.Sum256(big) {
			t.Fatalf("status %d or body changed", resp.StatusCode)
		}
	})
	t.Run("OPS-4/non-idempotent-not-replayed-after-send", func(t *testing.T) {
		first := testworld.NewGateway(t)
		first.SetMode(testworld.ModeResetAfterSend)
		second := testworld.NewGateway(t)
		origin := testworld.NewOrigin(t)
		e, err := engine.New(engine.Config{Candidates: proxytest.Gateways(t, false, first.Addr, second.Addr)})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		client := &http.Client{Transport: e.RoundTripper(), Timeout: 10 * time.Second}
		defer client.CloseIdleConnections()
		_, err = client.Post(origin.URL+"/pay", "text/plain", strings.NewReader("once"))
		if err == nil || !strings.Contains(err.Error(), engine.NonIdempotentBody) {
			t.Fatalf("err %v, want the not-replayed error", err)
		}
		if second.Requests() != 0 || origin.Count() != 1 {
			t.Fatalf("replayed: second gateway %d, origin %d", second.Requests(), origin.Count())
		}
	})
	t.Run("OPS-4/unsupported-scheme-closes-body", func(t *testing.T) {
		e, _, _ := newAPIEngine(t, engine.Config{})
		body := &closeRecorder{Reader: strings.NewReader("x")}
		req, _ := http.NewRequest("POST", "ftp://127.0.0.1/x", body)
		if _, err := e.RoundTripper().RoundTrip(req); err == nil || !body.closed {
			t.Fatalf("err %v closed %v", err, body.closed)
		}
	})
	t.Run("OPS-4/context-cancel", func(t *testing.T) {
		e, err := engine.New(engine.Config{Candidates: proxytest.Gateways(t, false, testworld.Blackhole(t))})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://127.0.0.1:9/", nil)
		start := time.Now()
		_, err = e.RoundTripper().RoundTrip(req)
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 3*time.Second {
			t.Fatalf("err %v after %v", err, time.Since(start))
		}
	})
}

type closeRecorder struct {
	io.Reader
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

// Compile-time checks: the engine fits where Go programs expect a dialer
// and a round tripper (SPEC OPS-4).
var (
	_ func(context.Context, string, string) (net.Conn, error) = (*engine.Engine)(nil).DialContext
	_ http.RoundTripper                                       = (*engine.Transport)(nil)
)
