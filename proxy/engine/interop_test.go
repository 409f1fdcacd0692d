//go:build interop && linux

// Interop suite: real tinyproxy, squid and privoxy (Debian packages) as
// gateways on loopback. Run with `go test -race -tags interop ./proxy/`.
// A missing binary fails the suite; nothing is skipped.
//
// Quirks met: tinyproxy closes the client connection
// after every plain request and answers wrong credentials with 401 (plain
// and CONNECT); squid needs its own pid_filename and a writable directory
// (it drops to user "proxy"), and takes ~1 s to exit after SIGTERM (we
// SIGKILL); privoxy needs templdir or its error pages are 500s. Unreachable
// origins: tinyproxy 500, squid 503, privoxy 503.
package engine_test

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
	"github.com/dual-proxy/dual-proxy/proxy"
	"github.com/dual-proxy/dual-proxy/proxy/engine"
)

// squidPasswd is "gwuser:gwpass" for basic_ncsa_auth (APR1 MD5, made with
// `openssl passwd -apr1 -salt dpsalt12 gwpass`).
const squidPasswd = "gwuser:$apr1$dpsalt12$73/BrniCMo3LX/pdlZNwd0\n"

// realGateway is one running gateway process (its own process group).
type realGateway struct {
	kind, addr string
	cmd        *exec.Cmd
	exited     chan struct{}
}

// kill SIGKILLs the gateway's process group and waits for the process.
func (g *realGateway) kill(t *testing.T) {
	syscall.Kill(-g.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-g.exited:
	case <-time.After(10 * time.Second):
		t.Errorf("%s did not exit after SIGKILL", g.kind)
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startReal starts kind ("tinyproxy", "squid", "privoxy") on a free
// loopback port in its own temp dir, optionally requiring Basic
// gwuser:gwpass, and waits until it forwards a request to probe. It is
// killed by t.Cleanup.
func startReal(t *testing.T, kind string, auth bool, probe *testworld.Origin) *realGateway {
	t.Helper()
	bin, err := exec.LookPath(kind)
	if err != nil {
		for _, d := range []string{"/usr/sbin", "/usr/bin"} {
			if _, serr := os.Stat(filepath.Join(d, kind)); serr == nil {
				bin, err = filepath.Join(d, kind), nil
			}
		}
	}
	if err != nil {
		t.Fatalf("interop: %s not installed (apt-get install -y --no-install-recommends tinyproxy squid privoxy): %v", kind, err)
	}
	for try := 0; try < 3; try++ {
		dir, err := os.MkdirTemp("", "dp-interop-"+kind+"-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		os.Chmod(dir, 0o777) // squid drops to user "proxy"
		port := freePort(t)
		args := writeGatewayConfig(t, kind, bin, dir, port, auth)
		logf, err := os.Create(filepath.Join(dir, "out.log"))
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, args...)
		cmd.Dir, cmd.Stdout, cmd.Stderr = dir, logf, logf
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			logf.Close()
			t.Fatalf("start %s: %v", kind, err)
		}
		logf.Close()
		g := &realGateway{kind: kind, addr: fmt.Sprintf("127.0.0.1:%d", port), cmd: cmd, exited: make(chan struct{})}
		go func() { cmd.Wait(); close(g.exited) }()
		t.Cleanup(func() { g.kill(t) })
		if waitGatewayReady(g, auth, probe, 15*time.Second) {
			return g
		}
		g.kill(t)
		out, _ := os.ReadFile(filepath.Join(dir, "out.log"))
		t.Logf("%s on port %d not ready (try %d): %s", kind, port, try+1, out)
	}
	t.Fatalf("interop: %s never became ready", kind)
	return nil
}

// writeGatewayConfig writes kind's config into dir and returns its
// command-line arguments (foreground mode, that config).
func writeGatewayConfig(t *testing.T, kind, bin, dir string, port int, auth bool) []string {
	t.Helper()
	write := func(name, s string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	switch kind {
	case "tinyproxy":
		conf := fmt.Sprintf("Port %d\nListen 127.0.0.1\nTimeout 600\nMaxClients 100\nAllow 127.0.0.1\nDisableViaHeader Yes\nLogLevel Warning\n", port)
		if auth {
			conf += "BasicAuth gwuser gwpass\n"
		}
		return []string{"-d", "-c", write("tinyproxy.conf", conf, 0o644)}
	case "squid":
		conf := fmt.Sprintf(`http_port 127.0.0.1:%d
pid_filename %[2]s/squid.pid
access_log stdio:%[2]s/access.log
cache_log %[2]s/cache.log
cache_store_log none
cache deny all
coredump_dir %[2]s
visible_hostname gw-squid-interop
via off
forwarded_for delete
dns_nameservers 127.0.0.1
hosts_file /etc/hosts
shutdown_lifetime 1 seconds
pinger_enable off
acl localhost_src src 127.0.0.1/32 ::1
`, port, dir)
		if auth {
			pw := write("passwd", squidPasswd, 0o644)
			conf += "auth_param basic program /usr/lib/squid/basic_ncsa_auth " + pw + "\nauth_param basic realm gw\nauth_param basic children 2\nacl authed proxy_auth REQUIRED\nhttp_access allow localhost_src authed\n"
		} else {
			conf += "http_access allow localhost_src\n"
		}
		conf += "http_access deny all\n"
		return []string{"-N", "-f", write("squid.conf", conf, 0o644)}
	case "privoxy":
		if auth {
			t.Fatal("privoxy has no client authentication")
		}
		conf := fmt.Sprintf("listen-address 127.0.0.1:%d\nconfdir %[2]s\ntempldir /etc/privoxy/templates\nlogdir %[2]s\nlogfile privoxy.log\ntoggle 0\nenable-remote-toggle 0\nenable-edit-actions 0\nkeep-alive-timeout 60\nsocket-timeout 300\n", port, dir)
		return []string{"--no-daemon", write("privoxy.conf", conf, 0o644)}
	}
	t.Fatalf("unknown gateway %s", kind)
	return nil
}

// waitGatewayReady polls until g forwards a GET to probe (≤ d).
func waitGatewayReady(g *realGateway, auth bool, probe *testworld.Origin, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		select {
		case <-g.exited:
			return false
		default:
		}
		if c, err := net.DialTimeout("tcp", g.addr, time.Second); err == nil {
			c.SetDeadline(time.Now().Add(2 * time.Second))
			extra := ""
			if auth {
				extra = "Proxy-Authorization: Basic Z3d1c2VyOmd3cGFzcw==\r\n" // gwuser:gwpass
			}
			fmt.Fprintf(c, "GET %s/ready HTTP/1.1\r\nHost: %s\r\n%sConnection: close\r\n\r\n", probe.URL, probe.Addr, extra)
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			c.Close()
			if err == nil && resp.StatusCode == 200 {
				return true
			}
		}
		time.Sleep(50 * time.Millisecond) // polling a process we do not control
	}
	return false
}

// interopClient is an HTTP client using the proxy at addr and trusting
// pool; its idle connections are closed by t.Cleanup.
func interopClient(t *testing.T, addr string, pool *x509.CertPool) *http.Client {
	pu, _ := url.Parse("http://" + addr)
	tr := &http.Transport{Proxy: http.ProxyURL(pu), TLSClientConfig: &tls.Config{RootCAs: pool}, DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 20 * time.Second}
}

// interopGet fetches u and returns status, body and the error.
func interopGet(c *http.Client, u string) (int, string, http.Header, error) {
	resp, err := c.Get(u)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header, err
}

func TestInterop(t *testing.T) {
	for _, kind := range []string{"tinyproxy", "squid", "privoxy"} {
		t.Run(kind, func(t *testing.T) { interopGateway(t, kind) })
	}
	for _, kind := range []string{"squid", "tinyproxy"} {
		t.Run(kind+"-auth", func(t *testing.T) { interopAuth(t, kind) })
	}
}

// interopGateway runs the suite with a real gateway of kind first and a
// testworld gateway "backup" second.
func interopGateway(t *testing.T, kind string) {
	origin := testworld.NewOrigin(t)
	tlsOrigin := testworld.NewTLSOrigin(t)
	unreachable := testworld.RefusedAddr(t)
	gw := startReal(t, kind, false, origin)
	// backup reaches "unreachable" (mapped to origin), the real gateway cannot.
	backup := testworld.NewGateway(t, testworld.WithName("backup"), testworld.WithRoute(unreachable, origin.Addr))
	cands := proxytest.Gateways(t, false, gw.addr, backup.Addr)
	newClient := func(t *testing.T) (*http.Client, *proxy.Server) {
		addr, srv := proxytest.Start(t, proxy.New, engine.Config{Candidates: cands, Cooldown: time.Minute})
		return interopClient(t, addr, tlsOrigin.CertPool), srv
	}

	t.Run("HTTP-1/plain-via-"+kind, func(t *testing.T) {
		c, _ := newClient(t)
		for i := 0; i < 3; i++ { // tinyproxy closes after each plain request
			st, body, h, err := interopGet(c, origin.URL+"/plain")
			if err != nil || st != 200 || body != origin.Greeting() || h.Get("X-Testworld-Gateway") != "" {
				t.Fatalf("request %d: %d %q %v via %q", i, st, body, err, h.Get("X-Testworld-Gateway"))
			}
		}
		if backup.Requests() != 0 {
			t.Fatalf("backup used %d times", backup.Requests())
		}
	})

	t.Run("CON-1/https-connect-via-"+kind, func(t *testing.T) {
		c, _ := newClient(t)
		st, body, _, err := interopGet(c, tlsOrigin.URL+"/secure")
		if err != nil || st != 200 || body != tlsOrigin.Greeting() || backup.Connects() != 0 {
			t.Fatalf("%d %q %v, backup CONNECTs %d", st, body, err, backup.Connects())
		}
	})

	t.Run("HTTP-5c/"+kind+"-own-5xx-moves-get-on", func(t *testing.T) {
		// The gateway's own answer for an unreachable origin.
		c0, err := net.DialTimeout("tcp", gw.addr, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		c0.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c0, "GET http://%s/ HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", unreachable, unreachable)
		resp, err := http.ReadResponse(bufio.NewReader(c0), nil)
		c0.Close()
		if err != nil || !strings.Contains(" 500 502 503 504 ", fmt.Sprintf(" %d ", resp.StatusCode)) {
			t.Fatalf("%s for an unreachable origin: %v %v", kind, resp, err)
		}
		t.Logf("%s answers an unreachable origin with %d", kind, resp.StatusCode)

		c, srv := newClient(t)
		before := backup.Requests()
		st, body, h, err := interopGet(c, "http://"+unreachable+"/x")
		if err != nil || st != 200 || body != origin.Greeting() || h.Get("X-Testworld-Gateway") != "backup" || backup.Requests() != before+1 {
			t.Fatalf("%d %q %v via %q", st, body, err, h.Get("X-Testworld-Gateway"))
		}
		if d := srv.Engine().Decisions(); len(d) != 1 || len(d[0].Failed) != 1 || d[0].Failed[0].Status != resp.StatusCode {
			t.Fatalf("decisions %+v", d)
		}
	})

	t.Run("CD-1/"+kind+"-killed-mid-run-fails-over-within-fast-fail", func(t *testing.T) {
		c, _ := newClient(t)
		if st, _, h, err := interopGet(c, origin.URL+"/warm"); err != nil || st != 200 || h.Get("X-Testworld-Gateway") != "" {
			t.Fatalf("warm-up: %d %v", st, err)
		}
		// A response streaming through the gateway when it dies.
		stream := testworld.NewOriginHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "tick\n")
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-time.After(15 * time.Second):
				io.WriteString(w, "late\n")
			}
		}))
		resp, err := c.Get(stream.URL + "/stream")
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(resp.Body)
		if line, err := br.ReadString('\n'); err != nil || line != "tick\n" {
			t.Fatalf("first line %q %v", line, err)
		}
		before := backup.Requests()
		gw.kill(t)
		rest, err := io.ReadAll(br)
		resp.Body.Close()
		if err == nil || len(rest) != 0 || backup.Requests() != before {
			t.Fatalf("stream after the kill: %q %v, backup %d→%d (HTTP-3: never replayed)", rest, err, before, backup.Requests())
		}
		for _, u := range []string{origin.URL + "/after", tlsOrigin.URL + "/after"} {
			start := time.Now()
			st, _, _, err := interopGet(c, u)
			if el := time.Since(start); err != nil || st != 200 || el > engine.DefaultFastFail {
				t.Fatalf("%s after the kill: %d %v in %v (ORD-5 fast fail %v)", u, st, err, el, engine.DefaultFastFail)
			}
		}
		if backup.Requests() != before+1 || backup.Connects() != 1 {
			t.Fatalf("backup requests %d connects %d", backup.Requests()-before, backup.Connects())
		}
	})
}

// interopAuth checks Basic credentials against a real gateway of kind
// (SPEC GW-4, CD-1): right ones pass, wrong ones move to the next
// candidate and cool the gateway for every host.
func interopAuth(t *testing.T, kind string) {
	origin := testworld.NewOrigin(t)
	tlsOrigin := testworld.NewTLSOrigin(t)
	gw := startReal(t, kind, true, origin)
	backup := testworld.NewGateway(t, testworld.WithName("backup"))
	for _, tc := range []struct {
		name, user string
		ok         bool
	}{{"GW-4/right-credentials-pass", "gwuser:gwpass", true}, {"GW-4/wrong-credentials-move-on", "gwuser:wrong", false}} {
		t.Run(tc.name, func(t *testing.T) {
			for _, u := range []string{origin.URL + "/a", tlsOrigin.URL + "/a"} {
				addr, srv := proxytest.Start(t, proxy.New, engine.Config{Candidates: proxytest.Gateways(t, false, "http://"+tc.user+"@"+gw.addr, backup.Addr), Cooldown: time.Minute})
				c := interopClient(t, addr, tlsOrigin.CertPool)
				br, bc := backup.Requests(), backup.Connects()
				st, _, _, err := interopGet(c, u)
				if err != nil || st != 200 {
					t.Fatalf("%s: %d %v", u, st, err)
				}
				used := backup.Requests()+backup.Connects() > br+bc
				if used == tc.ok {
					t.Fatalf("%s: backup used=%v with %s credentials", u, used, tc.user)
				}
				if !tc.ok {
					d := srv.Engine().Decisions()
					if len(d) != 1 || len(d[0].Failed) != 1 || d[0].Failed[0].Tier != "gateway" {
						t.Fatalf("decisions %+v", d)
					}
					t.Logf("%s answers wrong credentials (%s) with %d", kind, u[:5], d[0].Failed[0].Status)
					if !srv.Engine().Cooldowns().Cooling(gw.addr, "elsewhere.example") {
						t.Fatal("CD-1: wrong credentials must cool the gateway for all hosts")
					}
				}
			}
		})
	}
}
