// Package demo is `dual-proxy demo`: an offline demonstration that runs a
// real child (curl, or the built-in fetch client) through the launcher and
// two loopback gateways — the first dead, the second working — to a
// loopback origin over http:// and https://, and reports which candidate
// served each request and what failed over. It needs no internet and no
// configuration, and sends traffic only to 127.0.0.1.
package demo

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/lib/netutil"
	"github.com/dual-proxy/dual-proxy/internal/lib/selfcert"
	"github.com/dual-proxy/dual-proxy/launcher"
	"github.com/dual-proxy/dual-proxy/proxy"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/route"
	"github.com/dual-proxy/dual-proxy/proxy/statusdoc"
)

// Options configures Run.
type Options struct {
	// Out receives the report and the child's output.
	Out *os.File
	// Self is the dual-proxy executable, used for the built-in client when
	// curl is not installed (or when NoCurl is set).
	Self   string
	NoCurl bool
	// Env is the environment the child starts from (HOME, PATH …).
	Env []string
}

// Run performs the demonstration and returns an error when any fetch did
// not succeed through the working gateway.
//
// One piece: it is the demonstration's script; the origin, gateways and
// proxy it starts are all torn down by its deferred calls.
func Run(opts Options) error {
	out := opts.Out
	dir, err := os.MkdirTemp("", "dual-proxy-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	httpURL, httpsURL, certFile, stopOrigin, err := startOrigin(dir)
	if err != nil {
		return err
	}
	defer stopOrigin()

	// Gateway 1: a port where nothing listens, held for the demo's length
	// so no other process's listener can take it and make it work.
	dead, err := netutil.ReserveRefusingPort()
	if err != nil {
		return err
	}
	defer dead.Close()
	deadPort := dead.Port
	gwAddr, stopGateway, err := startGateway()
	if err != nil {
		return err
	}
	defer stopGateway()
	client := clientCommand(opts, certFile)

	fmt.Fprintf(out, "dual-proxy demo: everything on 127.0.0.1, no internet, no configuration\n\n")
	fmt.Fprintf(out, "  origin      %s and %s (throwaway self-signed certificate)\n", strings.TrimSuffix(httpURL, "/hello"), strings.TrimSuffix(httpsURL, "/hello"))
	fmt.Fprintf(out, "  gateway 1   http://127.0.0.1:%d  (dead: nothing listens there)\n", deadPort)
	fmt.Fprintf(out, "  gateway 2   http://%s  (a working forward proxy)\n", gwAddr)
	fmt.Fprintf(out, "  launcher    dual-proxy run --upstream-port %d --gateway %s --loopback-direct=false --health-url '' -- %s URL\n", deadPort, gwAddr, shellJoin(client))

	failed := 0
	for _, u := range []string{httpURL, httpsURL} {
		if err := fetchOnce(out, u, client, deadPort, gwAddr, opts.Env); err != nil {
			fmt.Fprintf(out, "  RESULT      FAILED: %v\n", err)
			failed++
		}
	}
	fmt.Fprintln(out)
	if failed > 0 {
		return fmt.Errorf("%d of 2 fetches failed", failed)
	}
	fmt.Fprintln(out, "Both requests failed over from the dead gateway to the working one; the launcher tore its proxy down after each child exited.")
	return nil
}

// startOrigin serves the loopback origin over http and https (a
// throwaway self-signed certificate, written to certFile in dir): the URLs
// of its /hello, and stop, which closes both servers and waits for them.
func startOrigin(dir string) (httpURL, httpsURL, certFile string, stop func(), err error) {
	certPEM, tlsCert, err := selfSigned()
	if err != nil {
		return "", "", "", nil, fmt.Errorf("demo certificate: %w", err)
	}
	certFile = filepath.Join(dir, "origin-cert.pem")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		return "", "", "", nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		fmt.Fprintf(w, "hello from the loopback origin over %s\n", scheme)
	})
	httpLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", "", "", nil, err
	}
	tlsLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		httpLn.Close()
		return "", "", "", nil, err
	}
	origin := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	originTLS := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, TLSConfig: &tls.Config{Certificates: []tls.Certificate{tlsCert}}}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); origin.Serve(httpLn) }()
	go func() { defer wg.Done(); originTLS.ServeTLS(tlsLn, "", "") }()
	stop = func() { origin.Close(); originTLS.Close(); wg.Wait() }
	return "http://" + httpLn.Addr().String() + "/hello", "https://" + tlsLn.Addr().String() + "/hello", certFile, stop, nil
}

// startGateway serves the demo's working gateway: a second dual-proxy on
// loopback with only the direct candidate. stop shuts it down within
// launcher.ShutdownGrace.
func startGateway() (addr string, stop func(), err error) {
	gwLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	gw, err := proxy.New(proxy.Config{Candidates: []candidate.Candidate{candidate.Direct}, LoopbackDirect: true})
	if err != nil {
		gwLn.Close()
		return "", nil, err
	}
	gwDone := make(chan struct{})
	go func() { gw.Serve(gwLn); close(gwDone) }()
	stop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), launcher.ShutdownGrace)
		defer cancel()
		gw.Shutdown(ctx)
		<-gwDone
	}
	return gwLn.Addr().String(), stop, nil
}

// fetchOnce runs the client for u behind a fresh launcher and reports.
func fetchOnce(out *os.File, u string, client []string, deadPort int, gwAddr string, env []string) error {
	fmt.Fprintf(out, "\n%s\n", u)
	var mu sync.Mutex
	var decisions []statusdoc.Decision
	cmd := append(append([]string{}, client...), u)
	fmt.Fprintf(out, "  child       %s\n", shellJoin(cmd))
	fmt.Fprintf(out, "  child says  ")
	status, err := launcher.Run(context.Background(), launcher.Config{
		ListenHost: "127.0.0.1",
		ListenPort: 0,
		Proxy: func(port int) (proxy.Config, []string, error) {
			cands, warnings, err := route.BuildCandidates(route.CandidateSpec{
				UpstreamHost: "127.0.0.1", UpstreamPort: deadPort,
				Gateways:   []string{gwAddr},
				ListenHost: "127.0.0.1", ListenPort: port,
			})
			return proxy.Config{Candidates: cands, LoopbackDirect: false, ConnectTimeout: 5 * time.Second}, warnings, err
		},
		Ready: func(s *proxy.Server, port int) {
			s.Engine().OnDecision(func(d statusdoc.Decision) {
				mu.Lock()
				decisions = append(decisions, d)
				mu.Unlock()
			})
		},
		Command: cmd,
		Env:     childEnv(env),
		Stdout:  out,
		Stderr:  out,
	})
	if err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	for _, d := range decisions {
		for _, f := range d.Failed {
			fmt.Fprintf(out, "  failed      %s  [%s: %s], next candidate\n", f.Candidate, f.Phase, f.Reason)
		}
		served := d.Candidate
		if served == "" {
			served = "nobody (" + d.Error + ")"
		}
		fmt.Fprintf(out, "  served by   %s  (%s, %.1f ms to an open path)\n", served, d.Kind, d.LatencyMS)
	}
	fmt.Fprintf(out, "  exit status %d\n", status)
	if status != 0 {
		return fmt.Errorf("child exited %d", status)
	}
	if len(decisions) == 0 || decisions[len(decisions)-1].Candidate != "http://"+gwAddr {
		return fmt.Errorf("request was not served by gateway 2")
	}
	return nil
}

// clientCommand is curl when installed, else the built-in fetch client.
func clientCommand(opts Options, certFile string) []string {
	if !opts.NoCurl {
		if p, err := exec.LookPath("curl"); err == nil {
			// --noproxy '': the launcher puts loopback in NO_PROXY, and the
			// demo wants the loopback origin reached *through* the proxy.
			return []string{p, "-sS", "-f", "--noproxy", "", "--cacert", certFile}
		}
	}
	return []string{opts.Self, "fetch", "--cacert", certFile}
}

// childEnv keeps the caller's environment but drops its proxy variables so
// the demo's candidates are exactly the two demo gateways.
func childEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(k) {
		case "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY":
			continue
		}
		out = append(out, kv)
	}
	return out
}

// selfSigned returns the demo origin's throwaway certificate for 127.0.0.1
// and localhost, PEM-encoded and as a tls.Certificate.
func selfSigned() ([]byte, tls.Certificate, error) {
	c, err := selfcert.Loopback("dual-proxy demo origin")
	return c.PEM, c.TLS, err
}

// shellJoin quotes args for display the way a shell user would type them.
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t'\"$\\") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}
