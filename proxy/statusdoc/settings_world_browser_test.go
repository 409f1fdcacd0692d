//go:build browser && linux

package statusdoc_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/app/settings"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
)

const formToken = "page-control-token-0123456789abcdef"

// worldPath is a running dual-proxy (the binary: its listener serves the
// status page and mounts the live settings, SPEC OPS-7) and the paths
// around it: the destination, target, is a loopback port where nothing
// listens, so direct fails; only the working gateway, good, reaches the
// origin for it (testworld's route); the first gateway, upstream-url, is
// dead and refuses connections. The health URL is the target, so the
// page's gateway test (a health check request through that gateway
// alone) works only through good.
type worldPath struct {
	addr   string // the proxy's listener, "127.0.0.1:PORT"
	target string // "127.0.0.1:PORT", refused when dialled directly
	origin *testworld.Origin
	good   *testworld.Gateway
	dead   string
}

func newWorldPath(t *testing.T) worldPath {
	t.Helper()
	p := worldPath{target: testworld.RefusedAddr(t), origin: testworld.NewOrigin(t)}
	p.good = testworld.NewGateway(t, testworld.WithName("good"), testworld.WithRoute(p.target, p.origin.Addr))
	p.dead = "http://" + testworld.RefusedAddr(t)
	p.addr = startInstance(t, "--listen-host", "127.0.0.1", "--listen-port", "0", "--port-fallback", "0",
		"--upstream-url", p.dead, "--loopback-direct=false", "--health-url", "http://"+p.target+"/", "--health-interval-ms", "0",
		"--control-token", formToken)
	return p
}

// startInstance builds cmd/dual-proxy and runs it with args in a clean,
// proxy-free environment (HOME and the registry in a temporary
// directory); it returns the address the instance logged as listening.
// The instance is stopped when t ends (testworld.StartInstance).
func startInstance(t *testing.T, args ...string) string {
	t.Helper()
	dir := t.TempDir()
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "XDG_STATE_HOME=" + filepath.Join(dir, "state"), "XDG_RUNTIME_DIR=" + dir}
	return testworld.StartInstance(t, testworld.BuildDualProxy(t), env, args...).Addr
}

// get sends one GET of the target through the proxy and returns the
// status and the gateway that forwarded it (testworld's header; "" for
// none).
func (w worldPath) get(t *testing.T) (int, string) {
	t.Helper()
	pu, _ := url.Parse("http://" + w.addr)
	tr := &http.Transport{Proxy: http.ProxyURL(pu), DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 30 * time.Second}).Get("http://" + w.target + "/")
	if err != nil {
		t.Fatalf("GET through the proxy: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK && string(body) != w.origin.Greeting() {
		t.Fatalf("GET through the proxy: %q, want the origin's greeting", body)
	}
	return resp.StatusCode, resp.Header.Get("X-Testworld-Gateway")
}

// settingsDoc is the part of the instance's settings document the tests
// read.
type settingsDoc struct {
	Version  string `json:"version"`
	Settings struct {
		Gateway    []string `json:"gateway"`
		CooldownMS int      `json:"cooldown-ms"`
		HealthURL  string   `json:"health-url"`
		RaceDelay  int      `json:"race-delay-ms"`
		FastFailMS int      `json:"fast-fail-ms"`
	} `json:"settings"`
}

// settings reads the instance's settings (GET, as any client).
func (w worldPath) settings(t *testing.T) settingsDoc {
	t.Helper()
	code, b := w.call(t, http.MethodGet, "", nil)
	var d settingsDoc
	if err := json.Unmarshal(b, &d); code != 200 || err != nil {
		t.Fatalf("GET %s: %d %v %s", settings.Path, code, err, b)
	}
	return d
}

// change PUTs body at the version read just before, as another client of
// the instance would.
func (w worldPath) change(t *testing.T, body string) {
	t.Helper()
	v := w.settings(t).Version
	if code, b := w.call(t, http.MethodPut, body, http.Header{"Authorization": {"Bearer " + formToken}, "If-Match": {`"` + v + `"`}}); code != 200 {
		t.Fatalf("PUT %s: %d %s", body, code, b)
	}
}

func (w worldPath) call(t *testing.T, method, body string, hdr http.Header) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+w.addr+settings.Path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	tr := &http.Transport{Proxy: nil}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}
