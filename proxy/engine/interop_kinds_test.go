//go:build interop && linux

// Interop suite for the gateway kinds of SPEC GW-6 and GW-7 with real
// programs on loopback: microsocks (with and without -u/-P) and
// dante-server as SOCKS5 gateways, stunnel4 in front of tinyproxy as an
// https:// gateway with a test CA made here. Run with
// `go test -race -tags interop -run InteropKinds ./proxy/`.
//
// Quirks met: microsocks answers a refused destination with reply 0x05
// and a name it cannot resolve with 0x01; danted needs no privileges with
// a config that has no user.* lines; stunnel connects to its backend only
// after the TLS handshake, so a client that rejects its certificate never
// reaches the backend ("0 byte(s) sent to socket" in its log); stunnel
// ends the whole connection when it receives close_notify, so a client's
// half-close (CON-2, sent as close_notify, which TLS 1.3 allows) ends a
// tunnel through it in both directions (TestKindsHalfClose shows the
// proxy's side with a gateway that keeps reading).
package engine_test

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/internal/testbed/realgw"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/engine"
)

func TestInteropKinds(t *testing.T) {
	t.Run("socks5", interopSOCKS)
	t.Run("https", interopHTTPS)
}

// kindsWorld is what every kinds case needs: origins and a testworld
// backup gateway that must stay unused while the real gateway serves.
type kindsWorld struct {
	origin, tlsOrigin *testworld.Origin
	backup            *testworld.Gateway
}

func newKindsWorld(t *testing.T) *kindsWorld {
	return &kindsWorld{origin: testworld.NewOrigin(t), tlsOrigin: testworld.NewTLSOrigin(t),
		backup: testworld.NewGateway(t, testworld.WithName("backup"))}
}

// serveBoth checks a plain GET and a CONNECT tunnel (https origin) through
// the proxy with cands, then a health check; the backup must not be used.
func (w *kindsWorld) serveBoth(t *testing.T, first candidate.Candidate, extra ...candidate.Candidate) *engine.Engine {
	t.Helper()
	cands := append(append([]candidate.Candidate{first}, extra...), proxytest.Gateway(t, w.backup.URL))
	addr, e := selProxy(t, engine.Config{Candidates: cands, Cooldown: time.Minute, HealthURL: mustURL(t, w.origin.URL+"/health")})
	c := interopClient(t, addr, w.tlsOrigin.CertPool)
	st, body, _, err := interopGet(c, w.origin.URL+"/plain")
	if err != nil || st != 200 || body != w.origin.Greeting() {
		t.Fatalf("plain GET: %d %q %v", st, body, err)
	}
	st, body, _, err = interopGet(c, w.tlsOrigin.URL+"/secure")
	if err != nil || st != 200 || body != w.tlsOrigin.Greeting() {
		t.Fatalf("CONNECT: %d %q %v", st, body, err)
	}
	if w.backup.Requests()+w.backup.Connects() != 0 {
		t.Fatalf("backup used: %d requests, %d CONNECTs", w.backup.Requests(), w.backup.Connects())
	}
	e.Checker().Run()
	return e
}

func interopSOCKS(t *testing.T) {
	w := newKindsWorld(t)
	open := realgw.Microsocks(t, "", "")
	locked := realgw.Microsocks(t, "gwuser", "gwpass")
	dante := realgw.Dante(t)

	for _, tc := range []struct{ name, url string }{
		{"GW-7/microsocks-socks5", "socks5://" + open.Addr},
		{"GW-7/microsocks-rfc1929-socks5h", "socks5h://gwuser:gwpass@" + locked.Addr},
		{"GW-7/dante-socks5h", "socks5h://" + dante.Addr},
		{"GW-7/dante-socks5", "socks5://" + dante.Addr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := proxytest.Gateway(t, tc.url)
			e := w.serveBoth(t, c)
			if p := e.HealthState().Preferred(); p != c.Key() {
				t.Fatalf("health preferred %q, want the SOCKS gateway", p)
			}
		})
	}

	t.Run("GW-7/socks5h-sends-the-name-gateway-resolves-it", func(t *testing.T) {
		addr, _ := selProxy(t, engine.Config{Candidates: []candidate.Candidate{proxytest.Gateway(t, "socks5h://"+open.Addr)}})
		_, port, _ := strings.Cut(w.origin.Addr, ":")
		st, body, _, err := interopGet(interopClient(t, addr, nil), "http://localhost:"+port+"/by-name")
		if err != nil || st != 200 || body != w.origin.Greeting() {
			t.Fatalf("GET by name: %d %q %v", st, body, err)
		}
	})

	t.Run("GW-7/dead-socks-gateway-first-next-serves", func(t *testing.T) {
		dead := proxytest.Gateway(t, "socks5h://"+testworld.RefusedAddr(t))
		e := w.serveBoth(t, dead, proxytest.Gateway(t, "socks5h://"+open.Addr))
		if f := proxytest.LastFailure(t, e, dead.Key()); f != "gateway-connect gateway" {
			t.Fatalf("dead gateway: %q", f)
		}
	})

	for _, tc := range []struct{ name, url string }{
		{"GW-7/wrong-password-gateway-cooldown-next-serves", "socks5h://gwuser:wrong@" + locked.Addr},
		{"GW-7/no-credentials-for-a-locked-gateway", "socks5h://" + locked.Addr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := proxytest.Gateway(t, tc.url)
			e := w.serveBoth(t, bad, proxytest.Gateway(t, "socks5h://"+dante.Addr))
			if f := proxytest.LastFailure(t, e, bad.Key()); f != "socks-handshake gateway" {
				t.Fatalf("failure %q, want socks-handshake gateway", f)
			}
			if !e.Cooldowns().Cooling(bad.Key(), "any.test:443") {
				t.Fatal("refused credentials must cool the gateway for every host")
			}
		})
	}

	t.Run("GW-7/microsocks-refused-destination-is-host-scoped", func(t *testing.T) {
		dest := testworld.RefusedAddr(t)
		route := testworld.NewGateway(t, testworld.WithName("route"), testworld.WithRoute(dest, w.origin.Addr))
		c := proxytest.Gateway(t, "socks5://"+open.Addr)
		addr, e := selProxy(t, engine.Config{Candidates: []candidate.Candidate{c, proxytest.Gateway(t, route.URL)}, Cooldown: time.Minute})
		st, body, _, err := interopGet(interopClient(t, addr, nil), "http://"+dest+"/")
		if err != nil || st != 200 || body != w.origin.Greeting() {
			t.Fatalf("GET: %d %q %v", st, body, err)
		}
		if f := proxytest.LastFailure(t, e, c.Key()); f != "connect-response host" {
			t.Fatalf("failure %q, want connect-response host (microsocks reply 0x05)", f)
		}
		if !e.Cooldowns().Cooling(c.Key(), dest) || e.Cooldowns().Cooling(c.Key(), w.origin.Addr) {
			t.Fatal("want a cooldown for the refused destination only")
		}
	})
}

// recorder is a TCP backend that counts connections and bytes received.
type recorder struct {
	addr         string
	conns, bytes atomic.Int64
}

func newRecorder(t *testing.T) *recorder {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{addr: ln.Addr().String()}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r.conns.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				n, _ := io.Copy(io.Discard, c)
				r.bytes.Add(n)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return r
}

func interopHTTPS(t *testing.T) {
	w := newKindsWorld(t)
	dir := t.TempDir()
	ca := testworld.NewCA(t, "dual-proxy interop CA")
	caFile, cert, key := ca.WriteFiles(t, dir, "gw", "127.0.0.1")
	tiny := startReal(t, "tinyproxy", false, w.origin)
	front := realgw.Stunnel(t, tiny.addr, cert, key)
	good := proxytest.Gateway(t, "https://"+front.Addr+"/?ca="+url.QueryEscape(caFile))

	t.Run("GW-6/stunnel-tinyproxy-connect-plain-and-health", func(t *testing.T) {
		e := w.serveBoth(t, good)
		if p := e.HealthState().Preferred(); p != good.Key() {
			t.Fatalf("health preferred %q", p)
		}
		if !strings.Contains(front.Log(), "accepted connection") {
			t.Fatalf("stunnel saw no connection:\n%s", front.Log())
		}
	})

	t.Run("GW-6/GW-4/stunnel-tinyproxy-basic-auth-right-and-wrong", func(t *testing.T) {
		locked := startReal(t, "tinyproxy", true, w.origin)
		lockedFront := realgw.Stunnel(t, locked.addr, cert, key)
		ca := "/?ca=" + url.QueryEscape(caFile)
		right := proxytest.Gateway(t, "https://gwuser:gwpass@"+lockedFront.Addr+ca)
		if e := w.serveBoth(t, right); e.HealthState().Preferred() != right.Key() {
			t.Fatalf("health preferred %q", e.HealthState().Preferred())
		}
		wrong := proxytest.Gateway(t, "https://gwuser:nope@"+lockedFront.Addr+ca)
		e := w.serveBoth(t, wrong, good)
		if f := proxytest.LastFailure(t, e, wrong.Key()); f != "connect-response gateway" {
			t.Fatalf("wrong credentials: %q, want connect-response gateway (tinyproxy's 401)", f)
		}
	})

	t.Run("GW-6/go-api-tls-inside-tls", func(t *testing.T) {
		e, err := engine.New(engine.Config{Candidates: []candidate.Candidate{good}})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		tr := &engine.Transport{Engine: e, TLSClientConfig: &tls.Config{RootCAs: w.tlsOrigin.CertPool}}
		defer tr.CloseIdleConnections()
		st, body, _, err := interopGet(&http.Client{Transport: tr, Timeout: 20 * time.Second}, w.tlsOrigin.URL+"/api")
		if err != nil || st != 200 || body != w.tlsOrigin.Greeting() {
			t.Fatalf("%d %q %v", st, body, err)
		}
	})

	other := testworld.NewCA(t, "somebody else's CA")
	for _, tc := range []struct {
		name  string
		files func() (string, string)
	}{
		{"GW-6/certificate-for-another-name-skipped-no-request-byte", func() (string, string) {
			_, c, k := ca.WriteFiles(t, t.TempDir(), "other-name", "proxy.other.example")
			return c, k
		}},
		{"GW-6/untrusted-certificate-skipped-no-request-byte", func() (string, string) {
			_, c, k := other.WriteFiles(t, t.TempDir(), "untrusted", "127.0.0.1")
			return c, k
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			backend := newRecorder(t)
			c, k := tc.files()
			badFront := realgw.Stunnel(t, backend.addr, c, k)
			bad := proxytest.Gateway(t, "https://"+badFront.Addr+"/?ca="+url.QueryEscape(caFile))
			e := w.serveBoth(t, bad, good)
			if f := proxytest.LastFailure(t, e, bad.Key()); f != "gateway-tls gateway" {
				t.Fatalf("failure %q, want gateway-tls gateway", f)
			}
			// The readiness probe's bare TCP connect logs an "unexpected eof";
			// the rejected handshakes log the alert our client sent.
			testkit.WaitFor(t, 5*time.Second, "stunnel to log the rejected handshake", func() bool {
				return strings.Contains(badFront.Log(), "alert")
			})
			if log := badFront.Log(); strings.Contains(log, "s_connect") || !strings.Contains(log, "0 byte(s) sent to socket") {
				t.Fatalf("stunnel connected to its backend or passed bytes on:\n%s", log)
			}
			if backend.conns.Load() != 0 || backend.bytes.Load() != 0 {
				t.Fatalf("the rejected gateway passed on %d connections, %d bytes", backend.conns.Load(), backend.bytes.Load())
			}
		})
	}
}
