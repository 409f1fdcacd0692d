//go:build browser && linux

package statusdoc_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/settings"
	"github.com/dual-proxy/dual-proxy/internal/testworld"
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
// The instance is stopped with SIGTERM when t ends.
func startInstance(t *testing.T, args ...string) string {
	t.Helper()
	dir, bin := t.TempDir(), filepath.Join(t.TempDir(), "dual-proxy")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "../../cmd/dual-proxy").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "XDG_STATE_HOME=" + filepath.Join(dir, "state"), "XDG_RUNTIME_DIR=" + dir}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var logs strings.Builder
	addrC := make(chan string, 1)
	readDone := make(chan struct{})
	listening := regexp.MustCompile(`msg=listening addr=(\S+)`)
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			logs.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addrC <- m[1]:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-readDone:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-readDone
		}
		_ = cmd.Wait()
		if t.Failed() {
			mu.Lock()
			t.Logf("dual-proxy logs:\n%s", logs.String())
			mu.Unlock()
		}
	})
	select {
	case addr := <-addrC:
		return addr
	case <-readDone:
		t.Fatal("dual-proxy exited before listening")
	case <-time.After(60 * time.Second):
		t.Fatal("dual-proxy did not log its listening address in 60 s")
	}
	return ""
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
