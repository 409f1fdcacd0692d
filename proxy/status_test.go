package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/route"
	"github.com/dual-proxy/dual-proxy/proxy/statusdoc"
)

// Secrets that must never appear in the status document or the logs
// (SPEC OPS-1, OPS-2, HTTP-6).
const (
	goodPassword = "GOODPW-s3cret"
	deadPassword = "DEADPW-s3cret"
	querySecret  = "QUERY-SECRET-42"
	secretPath   = "/private-path-7"
	headerSecret = "HEADER-SECRET-9"
	tunnelSecret = "TUNNEL-BYTES-3"
)

// directClient talks to the proxy's own endpoints, never through a proxy.
func directClient(t *testing.T) *http.Client {
	tr := &http.Transport{Proxy: nil}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// getStatus fetches and decodes GET /_dual-proxy/status from addr.
func getStatus(t *testing.T, addr string) (statusdoc.Status, string) {
	t.Helper()
	resp, err := directClient(t).Get("http://" + addr + statusdoc.StatusPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status answered %d %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), raw)
	}
	var st statusdoc.Status
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatalf("decode: %v\n%s", err, raw)
	}
	return st, string(raw)
}

// scriptedWorld is a proxy with a refused gateway (credentials), a working
// gateway (credentials) and direct, a fixed clock, a captured debug log,
// and the status Mux mounted.
type scriptedWorld struct {
	addr       string
	srv        *Server
	now        time.Time
	logs       *testkit.LogBuffer
	dead, good candidate.Candidate
	origin     *testworld.Origin
	gw         *testworld.Gateway
}

func newScriptedWorld(t *testing.T) *scriptedWorld {
	t.Helper()
	w := &scriptedWorld{now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), logs: &testkit.LogBuffer{}}
	w.origin = testworld.NewOrigin(t)
	w.gw = testworld.NewGateway(t, testworld.WithAuth("alice", goodPassword))
	var err error
	if w.dead, err = route.ParseGateway("http://bob:"+deadPassword+"@"+testworld.RefusedAddr(t), "upstream-url"); err != nil {
		t.Fatal(err)
	}
	if w.good, err = route.ParseGateway(w.gw.AuthURL, "gateway"); err != nil {
		t.Fatal(err)
	}
	mux := NewMux()
	cfg := Config{
		Candidates: []candidate.Candidate{w.dead, w.good, candidate.Direct},
		Cooldown:   30 * time.Second,
		PrefTTL:    time.Minute,
		// What a builder of the configuration shows (internal/app/settings
		// fills it from its key table); the engine reports it as given.
		Settings: map[string]any{"cooldown-ms": 30000, "pref-ttl-ms": 60000, "gateway": []string{"http://bob:***@" + w.good.Addr}},
		Handler:  mux,
		Logger:   slog.New(slog.NewJSONHandler(w.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:      func() time.Time { return w.now },
	}
	w.addr, w.srv = proxytest.Start(t, New, cfg)
	mux.Attach(w.srv)
	return w
}

// traffic sends one plain GET whose path and query hold secrets and one
// CONNECT tunnel carrying secret bytes, both to the origin.
func (w *scriptedWorld) traffic(t *testing.T) {
	t.Helper()
	c := proxytest.Dial(t, w.addr)
	br := bufio.NewReader(c)
	req := "GET http://" + w.origin.Addr + secretPath + "?token=" + querySecret + " HTTP/1.1\r\nHost: " + w.origin.Addr +
		"\r\nAuthorization: Bearer " + headerSecret + "\r\nConnection: close\r\n\r\n"
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	if resp, body := proxytest.ReadResponse(t, br, "GET"); resp.StatusCode != 200 || body != w.origin.Greeting() {
		t.Fatalf("plain GET: %d %q", resp.StatusCode, body)
	}

	c2, br2 := proxytest.Tunnel(t, w.addr, w.origin.Addr)
	io.WriteString(c2, "GET /"+tunnelSecret+" HTTP/1.1\r\nHost: "+w.origin.Addr+"\r\nConnection: close\r\n\r\n")
	if resp, _ := proxytest.ReadResponse(t, br2, "GET"); resp.StatusCode != 200 {
		t.Fatalf("GET in tunnel: %d", resp.StatusCode)
	}
}

func TestStatusDocument(t *testing.T) {
	w := newScriptedWorld(t)
	w.traffic(t)
	st, raw := getStatus(t, w.addr)

	t.Run("OPS-2/listener-and-clock", func(t *testing.T) {
		if len(st.Listeners) != 1 || st.Listeners[0] != w.addr {
			t.Errorf("listeners %q, want [%s]", st.Listeners, w.addr)
		}
		if !st.Now.Equal(w.now) {
			t.Errorf("now %v, want the injected %v", st.Now, w.now)
		}
		if fmt.Sprint(st.Settings) != "map[cooldown-ms:30000 gateway:[http://bob:***@"+w.good.Addr+"] pref-ttl-ms:60000]" {
			t.Errorf("settings %+v", st.Settings)
		}
	})

	t.Run("OPS-2/candidate-states-in-default-order", func(t *testing.T) {
		if len(st.Candidates) != 3 {
			t.Fatalf("%d candidates: %+v", len(st.Candidates), st.Candidates)
		}
		dead, good, direct := st.Candidates[0], st.Candidates[1], st.Candidates[2]
		if dead.Key != w.dead.Key() || dead.Candidate != "http://bob:***@"+w.dead.Addr || dead.Source != "upstream-url" {
			t.Errorf("dead candidate %+v", dead)
		}
		// CD-1/CD-2: refused gateway → gateway-wide cooldown of 30 s from
		// the injected clock.
		if dead.State != statusdoc.StateCooling || !dead.Until.Equal(w.now.Add(30*time.Second)) || dead.RemainingMS != 30000 {
			t.Errorf("dead: state %q until %v remaining %d, want cooling until %v (30000 ms)", dead.State, dead.Until, dead.RemainingMS, w.now.Add(30*time.Second))
		}
		if dead.Failures != 1 || dead.Successes != 0 || dead.LastFailure == nil {
			t.Fatalf("dead counters %+v", dead)
		}
		if lf := dead.LastFailure; lf.Phase != "gateway-connect" || lf.Tier != "gateway" || !lf.Time.Equal(w.now) || !strings.Contains(lf.Reason, "refused") {
			t.Errorf("dead last failure %+v", lf)
		}
		if good.Candidate != "http://alice:***@"+w.gw.Addr || good.State != statusdoc.StateHot || !good.Until.IsZero() ||
			good.Successes != 2 || good.Failures != 0 || good.LastFailure != nil || len(good.HostCooldowns) != 0 {
			t.Errorf("good candidate %+v", good)
		}
		// Never tried, never checked: untried, not hot, in the JSON as on
		// the page and in the status command (OPS-2).
		if direct.Key != "direct" || direct.State != statusdoc.StateUntried || direct.Successes != 0 || direct.Failures != 0 {
			t.Errorf("direct %+v", direct)
		}
	})

	t.Run("OPS-2/per-host-cache-entry", func(t *testing.T) {
		want := statusdoc.CacheStatus{Host: "127.0.0.1", Candidate: w.good.String(), Expires: w.now.Add(time.Minute), RemainingMS: 60000}
		if len(st.Cache) != 1 || st.Cache[0].Host != want.Host || st.Cache[0].Candidate != want.Candidate ||
			!st.Cache[0].Expires.Equal(want.Expires) || st.Cache[0].RemainingMS != want.RemainingMS {
			t.Errorf("cache %+v, want [%+v]", st.Cache, want)
		}
	})

	t.Run("OPS-2/decisions", func(t *testing.T) {
		if len(st.Decisions) != 2 {
			t.Fatalf("decisions %+v", st.Decisions)
		}
		plain, tunnel := st.Decisions[0], st.Decisions[1]
		if plain.Kind != "http" || plain.Host != "127.0.0.1" || plain.Candidate != w.good.String() || plain.Error != "" ||
			len(plain.Failed) != 1 || plain.Failed[0].Candidate != w.dead.String() || plain.Failed[0].Phase != "gateway-connect" || plain.Failed[0].Tier != "gateway" {
			t.Errorf("plain decision %+v", plain)
		}
		// ORD-2 + ORD-4: the cooling gateway is last and the cache hit
		// leads, so the tunnel opens at the first attempt.
		if tunnel.Kind != "connect" || tunnel.Host != "127.0.0.1" || tunnel.Candidate != w.good.String() || len(tunnel.Failed) != 0 {
			t.Errorf("tunnel decision %+v", tunnel)
		}
	})

	t.Run("OPS-2/health-off", func(t *testing.T) {
		if st.Health.Enabled || st.Health.Preferred != "" || len(st.Health.Results) != 0 || st.HealthRuns != 0 {
			t.Errorf("health %+v runs %d", st.Health, st.HealthRuns)
		}
	})

	t.Run("OPS-1/no-secrets-in-status-or-logs", func(t *testing.T) {
		// The secrets did travel: the origin saw the path and query.
		if seen := w.origin.Requests(); len(seen) == 0 || !strings.Contains(seen[0].RequestURI, secretPath+"?token="+querySecret) {
			t.Fatalf("origin did not see the secret request: %+v", seen)
		}
		logs := w.logs.String()
		for _, secret := range []string{goodPassword, deadPassword, querySecret, secretPath, headerSecret, tunnelSecret, "token="} {
			if strings.Contains(raw, secret) {
				t.Errorf("status document contains %q:\n%s", secret, raw)
			}
			if strings.Contains(logs, secret) {
				t.Errorf("logs contain %q:\n%s", secret, logs)
			}
		}
		// The failure is logged with host, redacted candidate, phase and
		// reason (SPEC HTTP-6).
		var found bool
		for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) != nil {
				t.Fatalf("log line is not JSON: %q", line)
			}
			if rec["msg"] == "path failed" {
				found = rec["host"] == "127.0.0.1" && rec["candidate"] == w.dead.String() && rec["phase"] == "gateway-connect" && rec["reason"] != ""
			}
		}
		if !found {
			t.Errorf("no 'path failed' line with host, candidate, phase, reason:\n%s", logs)
		}
	})

	t.Run("HTTP-6/routed-line-of-a-successful-failover-has-no-empty-error", func(t *testing.T) {
		var failovers int
		for _, line := range strings.Split(strings.TrimSpace(w.logs.String()), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) != nil || rec["msg"] != "routed" || rec["failovers"] == float64(0) {
				continue
			}
			failovers++
			if e, ok := rec["error"]; ok {
				t.Errorf("routed line of a successful failover carries error=%q: %s", e, line)
			}
		}
		if failovers == 0 {
			t.Fatalf("no routed line with a failover:\n%s", w.logs.String())
		}
	})
}

func TestStatusHandler(t *testing.T) {
	w := newScriptedWorld(t)
	client := directClient(t)
	// do takes the subtest's t, so a failure is reported under its name.
	do := func(t *testing.T, method, path, host string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+w.addr+path, nil)
		if host != "" {
			req.Host = host
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}

	t.Run("OPS-2/page-is-self-contained", func(t *testing.T) {
		resp, body := do(t, "GET", statusdoc.PagePath, "")
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("page: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		csp := resp.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "connect-src 'self'") {
			t.Errorf("CSP %q", csp)
		}
		if !strings.Contains(csp, "script-src 'self';") {
			t.Errorf("CSP %q: scripts must come from the proxy itself, none inline", csp)
		}
		if body != string(statusdoc.Page()) || strings.Contains(body, "<script>") {
			t.Error("page body is not the embedded page, or it has an inline script")
		}
		// Its scripts are the proxy's own: the status script and the
		// settings form (SPEC OPS-7), by relative path.
		page := strings.ReplaceAll(body, `<script src="status.js"></script>`, "")
		page = strings.ReplaceAll(page, `<script src="settings/form.js"></script>`, "")
		for _, ext := range []string{"src=", "<link", "@import", "url(", "http://", "https://"} {
			if strings.Contains(page, ext) {
				t.Errorf("page references an external asset: %q", ext)
			}
		}
		resp, script := do(t, "GET", statusdoc.ScriptPath, "")
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") || !strings.Contains(script, `fetch("status"`) {
			t.Fatalf("status script: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		// The SVG namespace URI names a vocabulary; nothing is fetched.
		script = strings.ReplaceAll(script, `"http://www.w3.org/2000/svg"`, "")
		for _, ext := range []string{"http://", "https://", "import("} {
			if strings.Contains(script, ext) {
				t.Errorf("status script references an external asset: %q", ext)
			}
		}
	})
	t.Run("OPS-2/redirect-methods-host-check", func(t *testing.T) {
		tr := &http.Transport{Proxy: nil}
		defer tr.CloseIdleConnections()
		req, _ := http.NewRequest("GET", "http://"+w.addr+"/_dual-proxy", nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusPermanentRedirect || resp.Header.Get("Location") != statusdoc.PagePath {
			t.Errorf("/_dual-proxy: %d %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		if resp, _ := do(t, "HEAD", statusdoc.StatusPath, ""); resp.StatusCode != 200 {
			t.Errorf("HEAD: %d", resp.StatusCode)
		}
		if resp, _ := do(t, "POST", statusdoc.StatusPath, ""); resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("POST: %d allow %q", resp.StatusCode, resp.Header.Get("Allow"))
		}
		if resp, _ := do(t, "GET", "/_dual-proxy/nope", ""); resp.StatusCode != 404 {
			t.Errorf("unknown path: %d", resp.StatusCode)
		}
		if resp, _ := do(t, "GET", "/elsewhere", ""); resp.StatusCode != 404 {
			t.Errorf("unmounted path: %d", resp.StatusCode)
		}
		_, port, _ := net.SplitHostPort(w.addr)
		for host, want := range map[string]int{"attacker.example": 421, "attacker.example:" + port: 421, "localhost:" + port: 200, "[::1]:" + port: 200, "127.0.0.1": 200,
			"127.0.0.1:" + port + ".attacker.example": 421, "localhost:1": 421} {
			if resp, _ := do(t, "GET", statusdoc.StatusPath, host); resp.StatusCode != want {
				t.Errorf("Host %q: %d, want %d", host, resp.StatusCode, want)
			}
		}
	})
}

func TestMux(t *testing.T) {
	t.Run("OPS-2/unattached-answers-503", func(t *testing.T) {
		m := NewMux()
		addr, _ := proxytest.Start(t, New, Config{Handler: m})
		resp, err := directClient(t).Get("http://" + addr + statusdoc.StatusPath)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("unattached: %d", resp.StatusCode)
		}
	})
	t.Run("OPS-2/pool-mounts-beside-status", func(t *testing.T) {
		m := NewMux()
		m.Handle("/pool/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "pool saw "+r.Method+" "+r.URL.Path)
		}))
		addr, srv := proxytest.Start(t, New, Config{Handler: m})
		m.Attach(srv)
		client := directClient(t)
		resp, err := client.Post("http://"+addr+"/pool/p1/v1/messages", "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "pool saw POST /pool/p1/v1/messages" {
			t.Fatalf("pool mount: %d %q", resp.StatusCode, b)
		}
		st, _ := getStatus(t, addr)
		if len(st.Listeners) != 1 || st.Listeners[0] != addr || len(st.Candidates) != 1 || st.Candidates[0].Key != "direct" {
			t.Fatalf("status beside pool: %+v", st)
		}
	})
	// The listener's root is a small index of its own pages (a page for a
	// browser, JSON for a client asking for it), not a bare 404; only the
	// mounted endpoints are listed, and the Host guard is the status page's.
	t.Run("OPS-2/listener-root-links-its-pages", func(t *testing.T) {
		m := NewMux()
		m.Handle("/pool/", http.NotFoundHandler())
		addr, srv := proxytest.Start(t, New, Config{Handler: m})
		m.Attach(srv)
		get := func(accept, host string) (*http.Response, string) {
			req, _ := http.NewRequest("GET", "http://"+addr+"/", nil)
			if accept != "" {
				req.Header.Set("Accept", accept)
			}
			if host != "" {
				req.Host = host
			}
			resp, err := directClient(t).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp, string(b)
		}
		resp, page := get("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", "")
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || resp.Header.Get("Content-Security-Policy") == "" {
			t.Fatalf("GET / for a browser: %d %v", resp.StatusCode, resp.Header)
		}
		for _, want := range []string{`href="/_dual-proxy/"`, `href="/pool/"`} {
			if !strings.Contains(page, want) {
				t.Errorf("page lacks %s:\n%s", want, page)
			}
		}
		if strings.Contains(page, "/metrics") {
			t.Errorf("page links /metrics, which this listener does not serve:\n%s", page)
		}
		m.Handle("/metrics", http.NotFoundHandler())
		resp, body := get("application/json", "")
		var doc struct {
			Name  string      `json:"name"`
			Links []IndexLink `json:"links"`
		}
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || json.Unmarshal([]byte(body), &doc) != nil || doc.Name != "dual-proxy" {
			t.Fatalf("GET / Accept: application/json: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		var paths []string
		for _, l := range doc.Links {
			paths = append(paths, l.Path)
		}
		if got, want := strings.Join(paths, " "), "/_dual-proxy/ /_dual-proxy/status /pool/ /metrics"; got != want {
			t.Errorf("links %q, want %q", got, want)
		}
		if resp, _ := get("", "attacker.example:7898"); resp.StatusCode != http.StatusMisdirectedRequest {
			t.Errorf("GET / with a foreign Host: %d, want 421", resp.StatusCode)
		}
		if resp, _ := get("", ""); resp.StatusCode != 200 {
			t.Errorf("GET / without Accept: %d", resp.StatusCode)
		}
	})
}

// TestShutdownClosesTunnelAndSlowRequest: an open CONNECT tunnel and a
// plain request whose origin never answers are both closed by Shutdown
// within the 1.5 s grace period plus a margin (SPEC LIS-3); goleak in
// TestMain checks that no goroutine survives.
func TestShutdownClosesTunnelAndSlowRequest(t *testing.T) {
	t.Run("LIS-3/tunnel-and-slow-request-closed", func(t *testing.T) {
		echo := proxytest.TCPServer(t, "127.0.0.1:0", func(c net.Conn) { io.Copy(c, c) })
		entered := make(chan struct{}, 1)
		slow := testworld.NewOriginHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			entered <- struct{}{}
			<-r.Context().Done()
		}))
		srv, err := New(Config{})
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ln) }()
		addr := ln.Addr().String()

		tun, tbr := proxytest.Tunnel(t, addr, echo)
		io.WriteString(tun, "ping")
		if b := make([]byte, 4); func() bool { _, err := io.ReadFull(tbr, b); return err != nil || string(b) != "ping" }() {
			t.Fatal("tunnel does not echo")
		}

		plain := proxytest.Dial(t, addr)
		io.WriteString(plain, "GET "+slow.URL+"/slow HTTP/1.1\r\nHost: "+slow.Addr+"\r\n\r\n")
		select {
		case <-entered:
		case <-time.After(10 * time.Second):
			t.Fatal("slow request never reached the origin")
		}

		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		start := time.Now()
		srv.Shutdown(ctx)
		took := time.Since(start)
		if took > 3*time.Second {
			t.Fatalf("Shutdown took %v, want < 3 s", took)
		}
		select {
		case err := <-served:
			if err != nil {
				t.Fatalf("Serve returned %v after Shutdown", err)
			}
		case <-time.After(3 * time.Second):
			t.Fatal("Serve did not return after Shutdown")
		}
		// Both client connections reach EOF (or an error) promptly.
		for name, br := range map[string]*bufio.Reader{"tunnel": tbr, "plain": bufio.NewReader(plain)} {
			var conn net.Conn = tun
			if name == "plain" {
				conn = plain
			}
			conn.SetReadDeadline(time.Now().Add(3 * time.Second))
			_, err := io.Copy(io.Discard, br)
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Errorf("%s connection still open after Shutdown", name)
			}
		}
	})
}
