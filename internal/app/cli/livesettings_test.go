package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/app/registry"
	"github.com/dual-proxy/dual-proxy/internal/app/settings"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
)

// liveEnv is the environment of a launcher or serve under test with its
// own registry directory (XDG_RUNTIME_DIR on Linux, %LocalAppData% on
// Windows).
func liveEnv(t *testing.T) []string {
	dir := t.TempDir()
	return []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH"), "XDG_RUNTIME_DIR=" + dir, "LOCALAPPDATA=" + dir, "TMPDIR=" + dir}
}

// registeredInstance polls the registry of env until one instance is
// there with its control token (written just after its entry), or fails
// after 15 s.
func registeredInstance(t *testing.T, env []string) (registry.Entry, string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		es, _ := registry.List(registryDir(env))
		if len(es) == 1 {
			if tok, err := es[0].ControlToken(); err == nil && tok != "" {
				return es[0], tok
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no registered instance with a control token in %s: %v", registryDir(env), es)
		}
		time.Sleep(20 * time.Millisecond) // polling another process's files, not synchronisation
	}
}

// proxyGet sends GET url through the proxy at addr and returns the status
// (0 when the proxy's answer could not be read).
func proxyGet(t *testing.T, addr, url string) int {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	host := strings.TrimPrefix(url, "http://")
	host, _, _ = strings.Cut(host, "/")
	io.WriteString(c, "GET "+url+" HTTP/1.1\r\nHost: "+host+"\r\nConnection: close\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// liveTunnel is a CONNECT tunnel through the proxy to an HTTP origin
// that answers one keep-alive request at a time.
type liveTunnel struct {
	c  net.Conn
	br *bufio.Reader
}

// openLiveTunnel opens a tunnel through the proxy at addr to target.
func openLiveTunnel(t *testing.T, addr, target string) *liveTunnel {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(60 * time.Second))
	io.WriteString(c, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT %s: %v %v", target, resp, err)
	}
	return &liveTunnel{c: c, br: br}
}

// get sends one GET over the tunnel and fails unless it is answered 200.
func (lt *liveTunnel) get(t *testing.T, host string) {
	t.Helper()
	io.WriteString(lt.c, "GET /in-tunnel HTTP/1.1\r\nHost: "+host+"\r\n\r\n")
	resp, err := http.ReadResponse(lt.br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("request in the tunnel: %v %v", resp, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// rawPut sends PUT /_dual-proxy/settings with the given headers and body
// to addr and returns the status.
func rawPut(t *testing.T, addr, body string, hdr map[string]string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, "http://"+addr+settings.Path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func TestLiveSettingsOfALauncher(t *testing.T) {
	env := liveEnv(t)
	origin := testworld.NewOrigin(t)
	gw := testworld.NewGateway(t)
	dead := testworld.RefusedAddr(t)
	// The launcher's only gateway (its upstream) is dead; loopback
	// destinations go through the candidate list like any other, so a
	// request is served direct after the dead gateway failed.
	startLauncher(t, env, "--upstream-url", "http://"+dead, "--loopback-direct=false")
	e, token := registeredInstance(t, env)
	ctx := context.Background()
	cl := &settings.Client{Addr: e.Addr, Token: token}

	t.Run("OPS-7/control-token-kept-in-the-registry-0600", func(t *testing.T) {
		if runtime.GOOS == "windows" {
			t.Skip("file modes: the registry directory under %LocalAppData% is the user's")
		}
		ents, _ := os.ReadDir(registryDir(env))
		found := false
		for _, de := range ents {
			if strings.HasSuffix(de.Name(), ".control") {
				found = true
				if info, _ := de.Info(); info.Mode().Perm() != 0o600 {
					t.Fatalf("%s has mode %v, want 0600", de.Name(), info.Mode().Perm())
				}
			}
		}
		if !found {
			t.Fatalf("no PID.control in %v", ents)
		}
	})

	tun := openLiveTunnel(t, e.Addr, origin.Addr) // before any change
	tun.get(t, origin.Addr)
	if st := proxyGet(t, e.Addr, origin.URL+"/before"); st != 200 || gw.Requests() != 0 {
		t.Fatalf("before the change: status %d, %d requests through the new gateway", st, gw.Requests())
	}

	t.Run("OPS-7/no-token-401", func(t *testing.T) {
		_, err := (&settings.Client{Addr: e.Addr}).Set(ctx, map[string]any{settings.Gateway: []string{gw.URL}})
		var re *settings.RemoteError
		if !errors.As(err, &re) || re.Status != http.StatusUnauthorized {
			t.Fatalf("change without the token: %v", err)
		}
	})
	t.Run("OPS-7/cross-site-403", func(t *testing.T) {
		st := rawPut(t, e.Addr, `{"cooldown-ms": 1}`, map[string]string{"Authorization": "Bearer " + token, "If-Match": "x", "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"})
		if st != http.StatusForbidden {
			t.Fatalf("cross-site PUT: %d, want 403", st)
		}
	})
	t.Run("OPS-7/stale-version-409", func(t *testing.T) {
		st := rawPut(t, e.Addr, `{"cooldown-ms": 1}`, map[string]string{"Authorization": "Bearer " + token, "If-Match": `"stale-0"`})
		if st != http.StatusConflict {
			t.Fatalf("PUT with a stale version: %d, want 409", st)
		}
	})
	t.Run("OPS-7/invalid-put-changes-nothing", func(t *testing.T) {
		before, err := cl.Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = cl.Set(ctx, map[string]any{settings.Gateway: []string{gw.URL, "no-port-here"}, settings.CooldownMS: -1})
		var re *settings.RemoteError
		if !errors.As(err, &re) || re.Status != http.StatusBadRequest || len(re.Errors) != 2 {
			t.Fatalf("invalid change: %v", err)
		}
		after, err := cl.Get(ctx)
		if err != nil || after.Version != before.Version {
			t.Fatalf("version moved on an invalid change: %s -> %s (%v)", before.Version, after.Version, err)
		}
		if st := proxyGet(t, e.Addr, origin.URL+"/after-invalid"); st != 200 || gw.Requests() != 0 {
			t.Fatalf("after an invalid change: status %d, %d requests through the gateway it named", st, gw.Requests())
		}
	})
	t.Run("OPS-7/added-gateway-serves-the-next-request-open-tunnel-keeps-relaying", func(t *testing.T) {
		doc, err := cl.Set(ctx, map[string]any{settings.Gateway: []string{gw.URL}})
		if err != nil {
			t.Fatal(err)
		}
		if doc.Sources[settings.Gateway] != settings.SourceAPI {
			t.Fatalf("gateway's source %q, want api", doc.Sources[settings.Gateway])
		}
		if st := proxyGet(t, e.Addr, origin.URL+"/after"); st != 200 || gw.Requests() != 1 {
			t.Fatalf("after adding the gateway: status %d, %d requests through it, want 1", st, gw.Requests())
		}
		tun.get(t, origin.Addr) // the tunnel opened before keeps its path
		if gw.Connects() != 0 {
			t.Fatalf("the open tunnel moved: %d CONNECTs at the gateway", gw.Connects())
		}
	})
	t.Run("OPS-7/cli-verb-against-a-launcher-found-in-the-registry", func(t *testing.T) {
		out, errOut, st := runCmdEnv(t, DualProxy, env, "settings", "set", "cooldown-ms=1234", "prefer-direct=a.example,b.example")
		if st != 0 || !strings.Contains(out, "cooldown-ms = 1234 (api)\n") || !strings.Contains(out, "prefer-direct = a.example,b.example (api)\n") {
			t.Fatalf("settings set: %d %q %q", st, out, errOut)
		}
		if out, errOut, st = runCmdEnv(t, DualProxy, env, "settings", "get", "cooldown-ms"); st != 0 || out != "1234\n" {
			t.Fatalf("settings get cooldown-ms: %d %q %q", st, out, errOut)
		}
		for _, args := range [][]string{{"settings", "--addr", e.Addr, "get", "cooldown-ms"}, {"settings", "get", "--addr", e.Addr, "cooldown-ms"}} {
			if out, errOut, st = runCmdEnv(t, DualProxy, env, args...); st != 0 || out != "1234\n" {
				t.Fatalf("%v: %d %q %q", args, st, out, errOut)
			}
		}
		if out, errOut, st = runCmdEnv(t, DualProxy, env, "settings", "get", "--json", "cooldown-ms"); st != 0 || out != "1234\n" {
			t.Fatalf("settings get --json cooldown-ms: %d %q %q", st, out, errOut)
		}
		if out, errOut, st = runCmdEnv(t, DualProxy, env, "settings", "get"); st != 0 || !strings.Contains(out, "KEY") || !strings.Contains(out, "cooldown-ms") || !strings.Contains(out, "fixed: a restart changes it") {
			t.Fatalf("settings get: %d %q %q", st, out, errOut)
		}
		_, errOut, st = runCmdEnv(t, DualProxy, env, "settings", "set", "cooldown-ms=-5")
		if st != 2 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "nothing changed: cooldown-ms: must be") {
			t.Fatalf("a bad value: %d %q", st, errOut)
		}
		if out, errOut, st = runCmdEnv(t, DualProxy, env, "settings", "gateway", "remove", gw.URL); st != 0 || !strings.Contains(out, "gateway = (none)") {
			t.Fatalf("gateway remove: %d %q %q", st, out, errOut)
		}
		// No gateways: nothing at all to a pipe or a file, exit 0 (a
		// script's $(…) is empty, | wc -l is 0); --json says [].
		if out, errOut, st = runCmdEnv(t, DualProxy, env, "settings", "get", "gateway"); st != 0 || out != "" {
			t.Fatalf("settings get gateway with none: %d %q %q", st, out, errOut)
		}
		if out, errOut, st = runCmdEnv(t, DualProxy, env, "settings", "get", "--json", "gateway"); st != 0 || out != "[]\n" {
			t.Fatalf("settings get --json gateway with none: %d %q %q", st, out, errOut)
		}
		_, errOut, st = runCmdEnv(t, DualProxy, env, "settings", "gateway", "remove", gw.URL)
		if st != 2 || !strings.Contains(errOut, "is not a gateway of this instance") {
			t.Fatalf("removing a gateway not listed: %d %q", st, errOut)
		}
		if out, errOut, st = runCmdEnv(t, DualProxy, env, "settings", "gateway", "add", gw.URL); st != 0 || !strings.Contains(out, "gateway = "+gw.URL+" (api)") {
			t.Fatalf("gateway add: %d %q %q", st, out, errOut)
		}
		if st := proxyGet(t, e.Addr, origin.URL+"/after-cli"); st != 200 || gw.Requests() != 2 {
			t.Fatalf("after gateway add: status %d, %d requests through it, want 2", st, gw.Requests())
		}
		// host:port and http://host:port are one gateway, as the proxy
		// reads them: adding the other spelling changes nothing.
		bare := strings.TrimPrefix(gw.URL, "http://")
		if out, errOut, st = runCmdEnv(t, DualProxy, env, "settings", "gateway", "add", bare); st != 0 || !strings.Contains(out, "is already a gateway as given: nothing changed") {
			t.Fatalf("gateway add host:port: %d %q %q", st, out, errOut)
		}
		if out, errOut, st = runCmdEnv(t, DualProxy, env, "settings", "gateway", "list"); st != 0 || out != gw.URL+"\n" {
			t.Fatalf("gateway list: %d %q %q", st, out, errOut)
		}
		if out, errOut, st = runCmdEnv(t, DualProxy, env, "settings", "gateway", "remove", gw.URL); st != 0 || !strings.Contains(out, "gateway = (none)") {
			t.Fatalf("gateway remove by the URL of a host:port gateway: %d %q %q", st, out, errOut)
		}
		if out, errOut, st = runCmdEnv(t, DualProxy, env, "settings", "gateway", "list", "--json"); st != 0 || out != "[]\n" {
			t.Fatalf("gateway list --json with none: %d %q %q", st, out, errOut)
		}
		if _, errOut, st = runCmdEnv(t, DualProxy, env, "settings", "gateway", "show"); st != 2 || !strings.Contains(errOut, "dual-proxy settings gateway list") {
			t.Fatalf("gateway with a word that is no verb: %d %q", st, errOut)
		}
		if out, errOut, st = runCmdEnv(t, DualProxy, env, "settings", "gateway", "add", gw.URL); st != 0 {
			t.Fatalf("gateway add: %d %q %q", st, out, errOut)
		}
		if out, _, st = runCmdEnv(t, DualProxy, env, "settings", "token"); st != 0 || !strings.HasPrefix(out, token+"\n") {
			t.Fatalf("settings token: %d %q", st, out)
		}
		_, errOut, st = runCmdEnv(t, DualProxy, liveEnv(t), "settings", "get")
		if st != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "no running dual-proxy found") {
			t.Fatalf("no instance: %d %q", st, errOut)
		}
	})
	t.Run("OPS-7/two-instances-without-addr-exit-1-naming-both", func(t *testing.T) {
		env := liveEnv(t)
		// Two live processes (this test and the one that started it), so
		// the registry trusts both entries.
		for pid, addr := range map[int]string{os.Getpid(): "127.0.0.1:9", os.Getppid(): "127.0.0.1:10"} {
			reg, err := registry.Register(registryDir(env), registry.Entry{Program: "dual-proxy", PID: pid, Addr: addr}, "tok")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(reg.Remove)
		}
		if es, _ := registry.List(registryDir(env)); len(es) != 2 {
			t.Skipf("the registry trusts %d of the two entries: the parent process is not one this OS shows (Wine)", len(es))
		}
		for _, args := range [][]string{{"settings", "get"}, {"settings", "gateway", "list"}, {"settings", "set", "cooldown-ms=1"}} {
			_, errOut, st := runCmdEnv(t, DualProxy, env, args...)
			if st != 1 || !strings.Contains(errOut, "2 instances are running") || !strings.Contains(errOut, "127.0.0.1:10") || !strings.Contains(errOut, "--addr") {
				t.Fatalf("%v: %d %q", args, st, errOut)
			}
		}
	})
	t.Run("OPS-7/empty-upstream-url-means-no-first-gateway", func(t *testing.T) {
		out, errOut, st := runCmdEnv(t, DualProxy, env, "settings", "set", "upstream-url=")
		if st != 0 || !strings.Contains(out, "upstream-url = (none) (api)") {
			t.Fatalf("settings set upstream-url=: %d %q %q", st, out, errOut)
		}
		if cands := liveCandidates(t, e.Addr); strings.Contains(cands, dead) || strings.Contains(cands, "7897") {
			t.Fatalf("upstream-url '' kept a first gateway: %s", cands)
		}
		if out, errOut, st = runCmdEnv(t, DualProxy, env, "settings", "set", "upstream-url=null"); st != 0 || !strings.Contains(out, "upstream-url = (not set) (default)") {
			t.Fatalf("settings set upstream-url=null: %d %q %q", st, out, errOut)
		}
		if out, errOut, st = runCmdEnv(t, DualProxy, env, "settings", "get", "--json", "upstream-url"); st != 0 || out != "null\n" {
			t.Fatalf("settings get --json upstream-url: %d %q %q", st, out, errOut)
		}
		if cands := liveCandidates(t, e.Addr); !strings.Contains(cands, "127.0.0.1:7897") {
			t.Fatalf("upstream-url not set: the first gateway is upstream-host:upstream-port, got %s", cands)
		}
	})
}

// liveCandidates are the candidates of the status document of the
// instance at addr, one "key" per line.
func liveCandidates(t *testing.T, addr string) string {
	t.Helper()
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil}}
	resp, err := hc.Get("http://" + addr + "/_dual-proxy/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		Candidates []struct {
			Key string `json:"key"`
		} `json:"candidates"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, c := range st.Candidates {
		keys = append(keys, c.Key)
	}
	return strings.Join(keys, "\n")
}
