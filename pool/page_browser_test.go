//go:build browser && linux

package pool

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/dual-proxy/dual-proxy/pool/balance"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// pageDOM opens url in a fresh headless Chromium (newBrowser: loopback
// only), waits until the page's script has set attribute ready on <html>
// (data-rendered: its first render of /pool/status; data-autotest: the end
// of the test button's call and the refresh after it) and returns the
// serialized DOM. With shot set it also returns a PNG of the 1280x1400
// viewport.
func pageDOM(t *testing.T, url, ready string, shot bool) (dom string, png []byte) {
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
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS("html["+ready+"]")), read); err != nil {
		t.Fatalf("chromium %s: %v", url, err)
	}
	return dom, png
}

// page is the DOM of url after the page's first render.
func page(t *testing.T, url string) string {
	t.Helper()
	dom, _ := pageDOM(t, url, "data-rendered", false)
	return dom
}

// has finds elements by a regexp over the serialized DOM.
func has(dom, pattern string) bool { return regexp.MustCompile(pattern).MatchString(dom) }

func TestPoolPageInChromium(t *testing.T) {
	auth := statusAnswer(401, nil, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)
	w := newWorld(t, []string{"a", "b", "c"}, []behaviour{okAnswer("a"), okAnswer("b"), auth}, "    models: [{id: m}]\n",
		Options{Token: "tok", Now: time.Now})
	// Scripted traffic: s0 → a, s1 → b, s2 → c (401: auth cooldown) → fails over.
	for i := 0; i < 3; i++ {
		h := map[string]string{"Authorization": "Bearer tok", "X-Session-Id": fmt.Sprint("page-s", i)}
		resp, body := w.callAPI("/pool/p/v1/messages", h, msgBody("m", true))
		if resp.StatusCode != 200 {
			t.Fatalf("traffic %d: %d %q", i, resp.StatusCode, body)
		}
	}
	if c := w.member("c"); c.State != "cooling" || c.CooldownClass != config.ClassAuth {
		t.Fatalf("setup: c = %+v", c)
	}
	poolPage := w.srv.URL + "/pool/"

	t.Run("POOL-13/page-shows-bindings-and-cooldowns", func(t *testing.T) {
		dom := page(t, poolPage)
		if !has(dom, `data-rendered="3"`) {
			t.Fatalf("page did not render the status:\n%s", dom)
		}
		for _, want := range []string{
			`<tr data-member="c" data-state="cooling">`, `<td class="class">key refused (auth)</td>`,
			`<tr data-member="a" data-state="ready">`, `<tr data-member="b" data-state="ready">`,
		} {
			if !strings.Contains(dom, want) {
				t.Errorf("missing %s", want)
			}
		}
		for i := 0; i < 3; i++ {
			h := balance.SessionHash(fmt.Sprint("page-s", i))
			if !has(dom, `<tr data-session="`+h+`" data-pool="p">`) {
				t.Errorf("session %d (%s) has no binding row", i, h)
			}
			if strings.Contains(dom, fmt.Sprint("page-s", i)) {
				t.Errorf("raw session id %d on the page", i)
			}
		}
		if !strings.Contains(dom, "m → a") || !strings.Contains(dom, "m → b") {
			t.Error("bindings model → member missing")
		}
		// The failover call: member a after c failed, one failover.
		h2 := balance.SessionHash("page-s2")
		if !has(dom, `<tr data-session="`+h2+`" data-member="a" data-class=""><td>[^<]*</td><td>p</td><td><code>`+h2+`</code></td><td>m</td><td>a</td><td>anthropic</td><td class="num">1</td>`) {
			t.Errorf("recent calls lack the failover of page-s2:\n%s", dom)
		}
		if strings.Contains(dom, "SECRET") {
			t.Error("secret on the page")
		}
	})

	t.Run("POOL-13/verdict-names-serving-and-failing-member", func(t *testing.T) {
		dom := page(t, poolPage)
		m := regexp.MustCompile(`<div class="verdict" data-level="([a-z]+)" data-serving="([a-z]*)">([^<]*)</div>`).FindStringSubmatch(dom)
		if m == nil {
			t.Fatalf("no pool verdict:\n%s", dom)
		}
		if m[1] != "warn" || m[2] != "a" || !strings.HasPrefix(m[3], "p: serving via a (last call ") ||
			!strings.Contains(m[3], "2 of 3 members ready") || !regexp.MustCompile(`c cooling since \d\d:\d\d:\d\d \(for \d+ s\), retry in \d+ s: `).MatchString(m[3]) || !strings.Contains(m[3], "key refused (auth)") {
			t.Fatalf("verdict %q (level %s, serving %s)", m[3], m[1], m[2])
		}
		if !has(dom, `<div id="verdict" class="verdict" data-level="warn">p: serving via a`) {
			t.Fatalf("no top verdict line:\n%s", dom)
		}
		if !strings.Contains(dom, `<a href="/_dual-proxy/">proxy status</a>`) {
			t.Error("no link to the proxy status page")
		}
	})
	t.Run("POOL-13/ttft-charts-render", func(t *testing.T) {
		dom := page(t, poolPage)
		charts := regexp.MustCompile(`<svg class="spark"[^>]*data-points="(\d+)" data-failures="(\d+)"`).FindAllStringSubmatch(dom, -1)
		if len(charts) != 3 || charts[0][1] == "0" || !strings.Contains(dom, "<polyline points=") {
			t.Fatalf("charts %v: want one per member, a's with points", charts)
		}
	})
	t.Run("POOL-20/token-hint-only-when-required", func(t *testing.T) {
		dom := page(t, poolPage)
		if !has(dom, `<span id="tokenstate" data-required="yes">[^<]*pool token`) {
			t.Fatalf("no token hint on a token-protected pool:\n%s", dom)
		}
		open := newWorld(t, []string{"a"}, []behaviour{okAnswer("a")}, "", Options{Now: time.Now})
		dom = page(t, open.srv.URL+"/pool/")
		if !has(dom, `<span id="tokenstate" data-required="no"></span>`) {
			t.Fatalf("token hint shown although no token is required:\n%s", dom)
		}
	})

	t.Run("POOL-14/test-button-adds-a-call", func(t *testing.T) {
		before := len(w.pool.Status().Recent)
		dir := t.TempDir()
		url := poolPage + "?autotest=m#token=tok"
		dom, png := pageDOM(t, url, "data-autotest", true)
		if !has(dom, `data-autotest="done"`) || !has(dom, `<div id="testresult" aria-live="polite" data-result="ok">`) {
			t.Fatalf("autotest did not finish ok:\n%s", dom)
		}
		if !has(dom, `<tr data-session="test" data-member="[ab]" data-class="">`) {
			t.Fatalf("recent calls lack the test call:\n%s", dom)
		}
		if !has(dom, `test p / m: ok · member [ab] · time to first token \d+ ms`) {
			t.Fatalf("no test result line:\n%s", dom)
		}
		st := w.pool.Status()
		if len(st.Recent) != before+1 || st.Recent[len(st.Recent)-1].Session != testSession {
			t.Fatalf("server saw no test call: %+v", st.Recent)
		}
		// Without the token the page's test gets the pool's 401.
		dom, _ = pageDOM(t, poolPage+"?autotest=m", "data-autotest", false)
		if !has(dom, `data-result="failed"`) || !strings.Contains(dom, "401") {
			t.Fatalf("test without token:\n%s", dom)
		}
		// Screenshot as an artifact.
		shot := filepath.Join(dir, "pool-page.png")
		if err := os.WriteFile(shot, png, 0o644); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(shot)
		if err != nil || fi.Size() < 10000 {
			t.Fatalf("screenshot: %v", err)
		}
		t.Logf("screenshot: %s (%d bytes)", shot, fi.Size())
		if os.Getenv("DUAL_PROXY_SHOTS") == "1" { // the README's picture, taken by this test
			if b, err := os.ReadFile(shot); err != nil || os.WriteFile(filepath.Join("..", "docs", "pool-page.png"), b, 0o644) != nil {
				t.Fatalf("cannot write docs/pool-page.png: %v", err)
			}
		}
		if keep := os.Getenv("POOL_TEST_ARTIFACTS"); keep != "" { // optional: keep it past the test
			if b, err := os.ReadFile(shot); err == nil && os.WriteFile(filepath.Join(keep, "pool-page.png"), b, 0o644) == nil {
				t.Logf("copied to %s", filepath.Join(keep, "pool-page.png"))
			}
		}
	})
}
