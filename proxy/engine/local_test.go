package engine_test

import (
	"bufio"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
	"github.com/dual-proxy/dual-proxy/proxy"
	"github.com/dual-proxy/dual-proxy/proxy/engine"
	"github.com/dual-proxy/dual-proxy/proxy/statusdoc"
)

func TestLocalResourceExhaustion(t *testing.T) {
	gw := testworld.NewGateway(t)
	origin := testworld.NewOrigin(t)
	addr, srv := proxytest.Start(t, proxy.New, engine.Config{Candidates: proxytest.Gateways(t, true, gw.Addr), Cooldown: time.Minute})
	// Every socket the engine opens fails as if the process were out of
	// descriptors (net.Dialer calls Control after socket(2)).
	srv.Engine().Dialer().Net.Control = func(string, string, syscall.RawConn) error { return syscall.EMFILE }
	noCooldown := func(t *testing.T) {
		t.Helper()
		for _, c := range srv.Engine().Status().Candidates {
			if c.State == statusdoc.StateCooling || c.Failures != 0 || len(c.HostCooldowns) != 0 {
				t.Fatalf("candidate %s blamed for our EMFILE: %+v", c.Candidate, c)
			}
		}
	}
	t.Run("CD-1/emfile-on-plain-request-is-503-no-cooldown", func(t *testing.T) {
		c := proxytest.Dial(t, addr)
		fmt.Fprintf(c, "GET %s/ HTTP/1.1\r\nHost: %s\r\n\r\n", origin.URL, origin.Addr)
		resp, body := proxytest.ReadResponse(t, bufio.NewReader(c), "GET")
		if resp.StatusCode != 503 || !strings.Contains(body, "too many open files") || !strings.Contains(body, "local") {
			t.Fatalf("%d %q, want 503 naming the local cause", resp.StatusCode, body)
		}
		noCooldown(t)
	})
	t.Run("CD-1/emfile-on-connect-is-503-no-cooldown", func(t *testing.T) {
		c := proxytest.Dial(t, addr)
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", origin.Addr, origin.Addr)
		code, body := proxytest.ReadConnectReply(t, bufio.NewReader(c))
		if code != 503 || !strings.Contains(body, "too many open files") {
			t.Fatalf("%d %q, want 503 naming the local cause", code, body)
		}
		noCooldown(t)
	})
	t.Run("HC-1/emfile-health-check-records-nothing", func(t *testing.T) {
		e, err := engine.New(engine.Config{Candidates: proxytest.Gateways(t, true, gw.Addr), HealthURL: &url.URL{Scheme: "http", Host: origin.Addr, Path: "/"}})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		e.Dialer().Net.Control = srv.Engine().Dialer().Net.Control
		e.Checker().Run()
		if hs := e.HealthState().Snapshot(); len(hs.Results) != 0 || len(hs.Marks) != 0 {
			t.Fatalf("health state after a check that could not open a socket: %+v", hs)
		}
	})
	t.Run("CD-1/emfile-on-dial-api-returns-local-error", func(t *testing.T) {
		_, err := srv.Engine().DialContext(t.Context(), "tcp", origin.Addr)
		if !errors.Is(err, syscall.EMFILE) {
			t.Fatalf("err %v, want EMFILE", err)
		}
		noCooldown(t)
	})
}
