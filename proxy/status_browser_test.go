//go:build browser

package proxy

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/proxy/status"
)

// chromium returns the path of Debian's chromium. A missing browser fails
// the test: this suite exists to run it (.ci/run installs it).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("chromium not found: apt-get install -y --no-install-recommends chromium fonts-dejavu-core")
	return ""
}

// runChromium runs headless chromium on url with extra flags and returns
// its stdout. The flags keep it off the network except for url (a loopback
// address); a fresh profile lives in the test's temp dir.
func runChromium(t *testing.T, url string, extra ...string) string {
	t.Helper()
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-default-apps", "--disable-extensions", "--no-default-browser-check",
		"--user-data-dir=" + t.TempDir(),
		// Let the page's fetch complete before the DOM is dumped: virtual
		// time waits for pending network requests.
		"--virtual-time-budget=5000"}
	args = append(append(args, extra...), url)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium(t), args...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\nstderr:\n%s", extra, err, stderr.String())
	}
	return stdout.String()
}

func TestBrowserStatusPage(t *testing.T) {
	w := newScriptedWorld(t)
	w.traffic(t)
	page := "http://" + w.addr + status.PagePath

	t.Run("OPS-2/dump-dom-shows-rendered-candidates-and-states", func(t *testing.T) {
		dom := runChromium(t, page, "--dump-dom")
		if m := regexp.MustCompile(`data-rendered="(\d+)"`).FindStringSubmatch(dom); m == nil || m[1] == "0" {
			t.Fatalf("the page's script did not render the status (data-rendered %v):\n%s", m, dom)
		}
		if m := regexp.MustCompile(`(?s)<div id="error"[^>]*>(.*?)</div>`).FindStringSubmatch(dom); m == nil || strings.TrimSpace(m[1]) != "" {
			t.Fatalf("page shows an error: %v", m)
		}
		// Rows in default order with their states, set by the script.
		rows := regexp.MustCompile(`<tr data-key="([^"]+)" data-state="([^"]+)">`).FindAllStringSubmatch(dom, -1)
		want := [][2]string{{w.dead.Key(), status.StateCooling}, {w.good.Key(), status.StateHot}, {"direct", status.StateHot}}
		if len(rows) != len(want) {
			t.Fatalf("candidate rows %v, want %v", rows, want)
		}
		for i, r := range rows {
			if r[1] != want[i][0] || r[2] != want[i][1] {
				t.Errorf("row %d: %s %s, want %s %s", i, r[1], r[2], want[i][0], want[i][1])
			}
		}
		for _, text := range []string{
			w.dead.String(), w.good.String(), // redacted names
			`<td class="state cooling">cooling</td>`, `<td class="state hot">hot</td>`,
			`<td class="nowrap">http</td>`, `<td class="nowrap">direct</td>`, // the kind column (GW-3)
			"30.0 s",                          // cooldown remaining (injected clock)
			"gateway-connect (gateway)",       // last failure phase and tier
			"1 m 0 s",                         // cache entry expires in
			`<td class="mono">127.0.0.1</td>`, // cached host and decision host
			"listening on " + w.addr,
		} {
			if !strings.Contains(dom, text) {
				t.Errorf("DOM lacks %q", text)
			}
		}
		for _, secret := range []string{goodPassword, deadPassword, querySecret, secretPath} {
			if strings.Contains(dom, secret) {
				t.Errorf("DOM contains secret %q", secret)
			}
		}
	})

	t.Run("OPS-2/screenshot", func(t *testing.T) {
		shot := filepath.Join(t.TempDir(), "status.png")
		runChromium(t, page, "--hide-scrollbars", "--window-size=1280,900", "--screenshot="+shot)
		f, err := os.Open(shot)
		if err != nil {
			t.Fatalf("no screenshot: %v", err)
		}
		defer f.Close()
		img, err := png.Decode(f)
		if err != nil {
			t.Fatalf("screenshot is not a PNG: %v", err)
		}
		b := img.Bounds()
		if b.Dx() != 1280 || b.Dy() != 900 {
			t.Fatalf("screenshot %v, want 1280x900", b)
		}
		// Rendered tables leave many distinct colours; a blank page one.
		colours := map[[4]uint32]bool{}
		for y := b.Min.Y; y < b.Max.Y; y += 3 {
			for x := b.Min.X; x < b.Max.X; x += 3 {
				r, g, bl, a := img.At(x, y).RGBA()
				colours[[4]uint32{r, g, bl, a}] = true
			}
		}
		if len(colours) < 8 {
			t.Fatalf("screenshot looks blank: %d colours", len(colours))
		}
		if out := os.Getenv("DUAL_PROXY_SHOT"); out != "" {
			data, _ := os.ReadFile(shot)
			os.WriteFile(out, data, 0o644)
		}
	})
}
