//go:build browser && linux

package proxy

import (
	"bytes"
	"context"
	"html"
	"image/png"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
	"github.com/dual-proxy/dual-proxy/proxy/statusdoc"
)

// newBrowser starts headless Chromium for one page (testworld.Browser): a
// 1280x900 window, 90 s. cancel ends the browser.
func newBrowser(t *testing.T) (ctx context.Context, cancel context.CancelFunc) {
	t.Helper()
	return testworld.Browser(t, 1280, 900, 90*time.Second)
}

// pageDOM opens url in a fresh browser, waits until the page's script has
// handled its first status document (body's data-rendered is no longer 0,
// or the error line says why it is not: a hand-built document may leave
// tables the test does not read unset) and returns the serialized DOM; with
// shot set also a PNG of the 1280x900 viewport.
func pageDOM(t *testing.T, url string, shot bool) (dom string, png []byte) {
	t.Helper()
	ctx, cancel := newBrowser(t)
	defer cancel()
	read := func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		var err error
		if dom, err = chromedp.OuterHTML(chromedp.CSS("html"))(ctx, tg); err != nil || !shot {
			return chromedp.Void{}, err
		}
		png, err = chromedp.CaptureScreenshot()(ctx, tg)
		return chromedp.Void{}, err
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(url),
		chromedp.Poll[chromedp.Void](`document.body.getAttribute("data-rendered") !== "0" || document.getElementById("error").textContent !== ""`,
			chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(0)), read); err != nil {
		t.Fatalf("chromium %s: %v", url, err)
	}
	return dom, png
}

// page is the DOM of url after the page's first render.
func page(t *testing.T, url string) string {
	t.Helper()
	dom, _ := pageDOM(t, url, false)
	return dom
}

func TestBrowserStatusPage(t *testing.T) {
	w := newScriptedWorld(t)
	w.traffic(t)
	pageURL := "http://" + w.addr + statusdoc.PagePath

	t.Run("OPS-2/dump-dom-shows-rendered-candidates-and-states", func(t *testing.T) {
		dom := page(t, pageURL)
		if m := regexp.MustCompile(`data-rendered="(\d+)"`).FindStringSubmatch(dom); m == nil || m[1] == "0" {
			t.Fatalf("the page's script did not render the status (data-rendered %v):\n%s", m, dom)
		}
		if m := regexp.MustCompile(`(?s)<div id="error"[^>]*>(.*?)</div>`).FindStringSubmatch(dom); m == nil || strings.TrimSpace(m[1]) != "" {
			t.Fatalf("page shows an error: %v", m)
		}
		// Rows in default order with their states, set by the script.
		rows := regexp.MustCompile(`<tr data-key="([^"]+)" data-state="([^"]+)"`).FindAllStringSubmatch(dom, -1)
		want := [][2]string{{w.dead.Key(), statusdoc.StateCooling}, {w.good.Key(), statusdoc.StateHot}, {"direct", statusdoc.StateUntried}}
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
			"30.0 s", // cooldown remaining (injected clock)
			"cannot connect to the gateway (gateway-connect), cooled for all hosts", // phase in words, code, tier
			"1 m 0 s",                         // cache entry expires in
			`<td class="mono">127.0.0.1</td>`, // cached host and decision host
			"listening on " + w.addr,
			"<span>cooldown 30.0 s</span>", // the settings' cooldown-ms (OPS-7: keyed by the flag names)
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

	t.Run("OPS-2/verdict-names-serving-path-and-failing-gateway", func(t *testing.T) {
		dom := page(t, pageURL)
		m := regexp.MustCompile(`<p id="verdict" data-level="([a-z]+)" data-serving="([^"]*)">([^<]*)</p>`).FindStringSubmatch(dom)
		if m == nil {
			t.Fatalf("no verdict line in\n%s", dom)
		}
		level, serving, text := m[1], m[2], html.UnescapeString(m[3])
		if serving != w.good.String() || !strings.HasPrefix(text, "Serving via "+w.good.String()) {
			t.Fatalf("verdict %q does not name the serving path %s", text, w.good.String())
		}
		if level != "warn" || !strings.Contains(text, "1 of 3 paths proven, 1 untried") ||
			!strings.Contains(text, w.dead.String()+" failing since ") || !strings.Contains(text, "cannot connect to the gateway (gateway-connect)") {
			t.Fatalf("verdict (%s) %q: want the dead gateway failing in words", level, text)
		}
		if !regexp.MustCompile(`[0-2][0-9]:[0-5][0-9]:[0-5][0-9]`).MatchString(text) {
			t.Fatalf("verdict %q has no HH:MM:SS time", text)
		}
	})
	t.Run("OPS-2/latency-charts-render", func(t *testing.T) {
		dom := page(t, pageURL)
		charts := regexp.MustCompile(`<svg class="spark"[^>]*data-points="(\d+)" data-failures="(\d+)"`).FindAllStringSubmatch(dom, -1)
		if len(charts) != 3 {
			t.Fatalf("%d charts, want one per candidate", len(charts))
		}
		if charts[0][2] == "0" || charts[1][1] == "0" || !strings.Contains(dom, "<polyline points=") {
			t.Fatalf("charts %v: want the dead gateway's failure dot and the good gateway's latency line", charts)
		}
	})
	t.Run("OPS-2/screenshot", func(t *testing.T) {
		_, shot := pageDOM(t, pageURL, true)
		img, err := png.Decode(bytes.NewReader(shot))
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
		saveShot(t, shot, "status-page.png")
	})
}

// saveShot writes a screenshot into docs/ when DUAL_PROXY_SHOTS=1 (the
// README's pictures are taken by these tests; a plain run writes nothing
// tracked).
func saveShot(t *testing.T, shot []byte, name string) {
	t.Helper()
	if os.Getenv("DUAL_PROXY_SHOTS") != "1" {
		return
	}
	if err := os.WriteFile(filepath.Join("..", "docs", name), shot, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBrowserHealthFailingNeverHot renders a status document in which a
// candidate without cooldown failed its last health check: the page shows
// it as failing, not hot, and the verdict says so.
func TestBrowserHealthFailingNeverHot(t *testing.T) {
	now := time.Now().UTC()
	st := statusdoc.Status{
		Listeners: []string{"127.0.0.1:7898"},
		Now:       now,
		Candidates: []statusdoc.CandidateStatus{
			{Candidate: "http://127.0.0.1:7897", Key: "127.0.0.1:7897", Source: "upstream", State: statusdoc.StateHot},
			{Candidate: "direct", Key: "direct", Source: "direct", State: statusdoc.StateHot, Successes: 2},
		},
		Health: statusdoc.HealthStatus{Enabled: true, Origin: "https://api.example", LastRun: now,
			Results: []statusdoc.HealthResultStatus{
				{Candidate: "http://127.0.0.1:7897", Alive: false, Reason: "connection refused"},
				{Candidate: "direct", Alive: true, Eligible: true},
			}},
		Decisions: []statusdoc.Decision{
			{Time: now.Add(-time.Minute), Kind: "connect", Host: "api.example", Candidate: "direct", LatencyMS: 40},
			{Time: now.Add(-30 * time.Second), Kind: "connect", Host: "api.example", Candidate: "direct", LatencyMS: 55},
		},
	}
	srv := httptest.NewServer(statusdoc.Handler(func() statusdoc.Status { return st }))
	defer srv.Close()
	t.Run("HC-4/health-failing-candidate-never-shown-hot", func(t *testing.T) {
		dom := page(t, srv.URL+statusdoc.PagePath)
		if !strings.Contains(dom, `data-key="127.0.0.1:7897" data-state="hot" data-shown="failing"`) ||
			!strings.Contains(dom, `<td class="state failing">failing (health)</td>`) {
			t.Fatalf("a candidate failing its health check is shown as hot:\n%s", dom)
		}
		if !strings.Contains(dom, "1 of 2 paths proven") || !strings.Contains(dom, "health check failed: connection refused") {
			t.Fatalf("verdict does not say the health check fails:\n%s", dom)
		}
	})
}

// TestBrowserVerdictUntried renders a status with health checks off and no
// traffic: no path has evidence, so none is called healthy.
func TestBrowserVerdictUntried(t *testing.T) {
	st := statusdoc.Status{
		Listeners: []string{"127.0.0.1:7898"},
		Now:       time.Now().UTC(),
		Candidates: []statusdoc.CandidateStatus{
			{Candidate: "http://127.0.0.1:7897", Key: "127.0.0.1:7897", Source: "upstream", State: statusdoc.StateHot},
			{Candidate: "direct", Key: "direct", Source: "direct", State: statusdoc.StateHot},
		},
		Decisions: []statusdoc.Decision{}, // as Engine.Status sends it
	}
	srv := httptest.NewServer(statusdoc.Handler(func() statusdoc.Status { return st }))
	defer srv.Close()
	t.Run("OPS-2/no-evidence-is-untried-not-healthy", func(t *testing.T) {
		dom := page(t, srv.URL+statusdoc.PagePath)
		if !strings.Contains(dom, "0 of 2 paths proven, 2 untried") || strings.Contains(dom, "paths healthy") {
			t.Fatalf("verdict over-claims untried paths:\n%s", dom)
		}
	})
}

// TestBrowserTargetDown renders the offline case: the health URL failed on
// every path while the gateway served requests. The page blames the
// target, shows the gateway hot and the path nothing proves untried.
func TestBrowserTargetDown(t *testing.T) {
	now := time.Now().UTC()
	st := statusdoc.Status{
		Listeners: []string{"127.0.0.1:7898"},
		Now:       now,
		Candidates: []statusdoc.CandidateStatus{
			{Candidate: "http://127.0.0.1:3128", Key: "127.0.0.1:3128", Source: "gateway", State: statusdoc.StateHot, Successes: 2},
			{Candidate: "direct", Key: "direct", Source: "direct", State: statusdoc.StateUntried},
		},
		Health: statusdoc.HealthStatus{Enabled: true, Origin: "https://api.deepseek.com", LastRun: now, TargetDown: true,
			Results: []statusdoc.HealthResultStatus{
				{Candidate: "http://127.0.0.1:3128", Reason: "gateway answered 502", Eligible: true},
				{Candidate: "direct", Reason: "dial: no such host", Eligible: true},
			}},
		Decisions: []statusdoc.Decision{
			{Time: now.Add(-30 * time.Second), Kind: "http", Host: "example.test", Candidate: "http://127.0.0.1:3128", LatencyMS: 40},
		},
	}
	srv := httptest.NewServer(statusdoc.Handler(func() statusdoc.Status { return st }))
	defer srv.Close()
	t.Run("HC-1/OPS-2/target-down-on-every-path-blames-no-path", func(t *testing.T) {
		dom := page(t, srv.URL+statusdoc.PagePath)
		for _, want := range []string{
			`data-key="127.0.0.1:3128" data-state="hot" data-shown="hot"`,
			`data-key="direct" data-state="untried" data-shown="untried"`,
			`<td class="state untried">untried</td>`,
			"1 of 2 paths proven, 1 untried",
			"health check target https://api.deepseek.com fails on every path: the target is down or unreachable from here, not the paths",
		} {
			if !strings.Contains(dom, want) {
				t.Errorf("DOM lacks %q", want)
			}
		}
		if strings.Contains(dom, "failing (health)") || strings.Contains(dom, "failing since") {
			t.Errorf("a path is blamed for the target:\n%s", dom)
		}
	})
}
