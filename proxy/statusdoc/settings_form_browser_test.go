//go:build browser && linux

package statusdoc_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
	"github.com/dual-proxy/dual-proxy/proxy/statusdoc"
)

// browser starts headless Chromium for the test (testworld.Browser): a
// 1280x1600 window, 120 s for the whole test.
func browser(t *testing.T) context.Context {
	t.Helper()
	ctx, _ := testworld.Browser(t, 1280, 1600, 120*time.Second)
	return ctx
}

// typeInto clears an input and types text as a user would (input events).
func typeInto(sel, text string) chromedp.Action[chromedp.Void] {
	clear := func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Evaluate[bool](`(function (e) { e.value = ''; return true; })(document.querySelector(`+strconv.Quote(sel)+`))`)(ctx, tg)
		return chromedp.Void{}, err
	}
	return chromedp.Steps(chromedp.WaitVisible(chromedp.CSS(sel)), clear, chromedp.SendKeys(chromedp.CSS(sel), text))
}

func click(sel string) chromedp.Action[chromedp.Void] { return chromedp.Click(chromedp.CSS(sel)) }
func wait(sel string) chromedp.Action[chromedp.Void]  { return chromedp.WaitVisible(chromedp.CSS(sel)) }

// text reads an element's text into *out.
func text(sel string, out *string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		v, err := chromedp.Text(chromedp.CSS(sel))(ctx, tg)
		*out = v
		return chromedp.Void{}, err
	}
}

// eval runs a JavaScript expression and stores its value in *out.
func eval[T any](expr string, out *T) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		v, err := chromedp.Evaluate[T](expr)(ctx, tg)
		*out = v
		return chromedp.Void{}, err
	}
}

// until waits (30 s at most) for a JavaScript expression to be true.
func until(expr string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(30*time.Second))(ctx, tg)
		return chromedp.Void{}, err
	}
}

// verdictHas is a JavaScript test that the verdict line holds s.
func verdictHas(s string) string {
	return `document.getElementById("verdict").textContent.indexOf(` + strconv.Quote(s) + `) >= 0`
}

// addGatewayOnPage adds w's working gateway on the settings form at
// page, tests it with its button, reviews and applies the change, and
// checks that the next request through the proxy goes through it and the
// verdict line follows. Before, the request fails: the dead first gateway
// and direct are the only candidates.
func addGatewayOnPage(t *testing.T, page string, w worldPath) {
	t.Helper()
	if code, _ := w.get(t); code != 502 || w.good.Requests() != 0 {
		t.Fatalf("before the change: %d, good gateway %d requests; want 502 (dead gateway, direct refused) and none", code, w.good.Requests())
	}
	ctx := browser(t)
	var probe, diff, done, verdict string
	err := chromedp.Do(ctx, chromedp.Navigate(page), wait(`#settings[data-state="loaded"]`),
		until(verdictHas("of 2 paths")),
		typeInto(`#settings-token`, formToken),
		typeInto(`#gw-new`, w.good.URL), click(`#gw-add`), wait(`#gw-list li[data-index="0"] .gw-test`),
		click(`#gw-list li[data-index="0"] .gw-test`), wait(`#gw-list li[data-index="0"] .gw-result[data-probe]`),
		text(`#gw-list li[data-index="0"] .gw-result`, &probe),
		click(`#settings-review-btn`), wait(`#settings[data-state="reviewed"]`), text(`#settings-diff`, &diff),
		click(`#settings-apply`), wait(`#settings[data-state="applied"]`), text(`#settings-msg`, &done),
		until(verdictHas("of 3 paths")))
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	if !strings.HasPrefix(probe, "works: ") || !strings.Contains(probe, w.target) {
		t.Errorf("gateway test: %q, want it working to %s", probe, w.target)
	}
	if !strings.Contains(diff, "gateway") || !strings.Contains(diff, "(none) → "+w.good.URL) || !strings.Contains(diff, "added "+w.good.URL) {
		t.Errorf("review: %q, want gateway (none) → %s, added", diff, w.good.URL)
	}
	if done != "applied: gateway" {
		t.Errorf("after apply: %q", done)
	}
	code, via := w.get(t)
	if code != 200 || via != "good" {
		t.Fatalf("after the change: %d via %q, want 200 via the added gateway", code, via)
	}
	if err := chromedp.Do(ctx, until(`document.getElementById("verdict").getAttribute("data-serving").indexOf(`+strconv.Quote(w.good.Addr)+`) >= 0`),
		text(`#verdict`, &verdict)); err != nil {
		t.Fatalf("verdict does not name the added gateway: %v", err)
	}
	if !strings.HasPrefix(verdict, "Serving via ") {
		t.Errorf("verdict %q", verdict)
	}
}

// TestSettingsFormOPS7 drives the status page's settings form in Chromium
// against a running dual-proxy whose listener serves the settings (SPEC
// OPS-7):
// a gateway added on the page carries the next request, an invalid value
// is refused at its field and applies once fixed, a stale version is
// reloaded and said so, the token never stays in the address, and the
// gateway list is reordered and shortened on the page.
func TestSettingsFormOPS7(t *testing.T) {
	w := newWorldPath(t)
	page := "http://" + w.addr + statusdoc.PagePath

	t.Run("OPS-7/add-gateway-on-the-page-moves-traffic-to-it", func(t *testing.T) {
		addGatewayOnPage(t, page, w)
		if g := w.settings(t).Settings.Gateway; len(g) != 1 || g[0] != w.good.URL {
			t.Fatalf("live gateways %v", g)
		}
	})

	t.Run("OPS-7/invalid-values-shown-at-their-fields-then-fixed", func(t *testing.T) {
		ctx := browser(t)
		var coolErr, healthErr, gwErr, refused string
		var invalid bool
		err := chromedp.Do(ctx, chromedp.Navigate(page), wait(`#settings[data-state="loaded"]`),
			typeInto(`#settings-token`, formToken),
			typeInto(`#set-cooldown-ms`, "-5"), typeInto(`#set-health-url`, "ftp://health.example"),
			typeInto(`#gw-new`, "127.0.0.1"), click(`#gw-add`), wait(`#gw-list li[data-index="1"]`),
			click(`#settings-review-btn`), wait(`#settings[data-state="reviewed"]`),
			click(`#settings-apply`), wait(`#settings[data-state="refused"]`),
			text(`.ferr[data-field="cooldown-ms"]`, &coolErr), text(`.ferr[data-field="health-url"]`, &healthErr),
			eval(`(document.querySelector('.ferr[data-field="gateway[1]"]').textContent || document.querySelector('.ferr[data-field="gateway"]').textContent)`, &gwErr),
			eval(`document.getElementById("set-cooldown-ms").getAttribute("aria-invalid") === "true"`, &invalid),
			text(`#settings-msg`, &refused))
		if err != nil {
			t.Fatalf("browser: %v", err)
		}
		if !strings.Contains(coolErr, "must be 0-") || !strings.Contains(healthErr, "want an http:// or https:// URL") || !strings.Contains(gwErr, "no port") || !invalid {
			t.Errorf("field errors: cooldown %q, health %q, gateway %q, marked %v", coolErr, healthErr, gwErr, invalid)
		}
		if !strings.HasPrefix(refused, "not applied, nothing changed") {
			t.Errorf("message %q", refused)
		}
		cur := w.settings(t).Settings
		if cur.CooldownMS != 30000 || cur.HealthURL != "http://"+w.target+"/" || len(cur.Gateway) != 1 {
			t.Fatalf("a refused change applied something: %v", cur)
		}
		if code, via := w.get(t); code != 200 || via != "good" {
			t.Fatalf("after a refused change: %d via %q", code, via)
		}
		var done string
		err = chromedp.Do(ctx, typeInto(`#set-cooldown-ms`, "45000"), typeInto(`#set-health-url`, "http://"+w.target+"/"),
			click(`#gw-list li[data-index="1"] .gw-remove`), wait(`#settings[data-state="loaded"]`),
			click(`#settings-review-btn`), wait(`#settings[data-state="reviewed"]`),
			click(`#settings-apply`), wait(`#settings[data-state="applied"]`), text(`#settings-msg`, &done))
		if err != nil {
			t.Fatalf("browser: %v", err)
		}
		if cool := w.settings(t).Settings.CooldownMS; done != "applied: cooldown-ms" || cool != 45000 {
			t.Fatalf("after the fix: %q, cooldown %d", done, cool)
		}
	})

	t.Run("OPS-7/stale-version-reloads-and-says-so", func(t *testing.T) {
		ctx := browser(t)
		if err := chromedp.Do(ctx, chromedp.Navigate(page), wait(`#settings[data-state="loaded"]`),
			typeInto(`#settings-token`, formToken), typeInto(`#set-race-delay-ms`, "300")); err != nil {
			t.Fatalf("browser: %v", err)
		}
		// Another client changes a setting after the page read them.
		w.change(t, `{"pref-ttl-ms": 90000}`)
		var stale, ttl, race string
		err := chromedp.Do(ctx, click(`#settings-review-btn`), wait(`#settings[data-state="reviewed"]`),
			click(`#settings-apply`), wait(`#settings[data-state="stale"]`), text(`#settings-msg`, &stale),
			eval(`document.getElementById("set-pref-ttl-ms").value`, &ttl), eval(`document.getElementById("set-race-delay-ms").value`, &race))
		if err != nil {
			t.Fatalf("browser: %v", err)
		}
		if !strings.Contains(stale, "changed elsewhere meanwhile") || ttl != "90000" || race != "300" {
			t.Fatalf("after a stale apply: %q, pref-ttl %q (want the other client's 90000), race delay %q (want the page's 300 kept)", stale, ttl, race)
		}
		if w.settings(t).Settings.RaceDelay != 250 {
			t.Fatal("a stale change applied")
		}
		var done string
		err = chromedp.Do(ctx, click(`#settings-review-btn`), wait(`#settings[data-state="reviewed"]`),
			click(`#settings-apply`), wait(`#settings[data-state="applied"]`), text(`#settings-msg`, &done))
		if race := w.settings(t).Settings.RaceDelay; err != nil || done != "applied: race-delay-ms" || race != 300 {
			t.Fatalf("reapplied: %v %q, race delay %d", err, done, race)
		}
	})

	t.Run("OPS-7/token-link-leaves-the-address-and-a-missing-token-is-said", func(t *testing.T) {
		ctx := browser(t)
		var href, field, refused string
		err := chromedp.Do(ctx, chromedp.Navigate(page+"#token="+formToken), wait(`#settings[data-state="loaded"]`),
			eval(`location.href`, &href), eval(`document.getElementById("settings-token").value`, &field))
		if err != nil {
			t.Fatalf("browser: %v", err)
		}
		if strings.Contains(href, formToken) || field != formToken {
			t.Fatalf("address %q, token field %q: the token must move from the address into the field", href, field)
		}
		ctx = browser(t)
		err = chromedp.Do(ctx, chromedp.Navigate(page), wait(`#settings[data-state="loaded"]`),
			typeInto(`#set-fast-fail-ms`, "1500"), click(`#settings-review-btn`), wait(`#settings[data-state="reviewed"]`),
			click(`#settings-apply`), wait(`#settings[data-state="refused"]`), text(`#token-err`, &refused))
		if err != nil {
			t.Fatalf("browser: %v", err)
		}
		if ff := w.settings(t).Settings.FastFailMS; refused != "paste the control token first" || ff != 2000 {
			t.Fatalf("without a token: %q, fast-fail %d", refused, ff)
		}
	})

	t.Run("OPS-7/reorder-and-remove-gateways-on-the-page", func(t *testing.T) {
		good := w.good
		other := testworld.NewGateway(t, testworld.WithName("other"), testworld.WithRoute(w.target, w.origin.Addr))
		ctx := browser(t)
		var first, diff string
		err := chromedp.Do(ctx, chromedp.Navigate(page), wait(`#settings[data-state="loaded"]`),
			typeInto(`#settings-token`, formToken),
			typeInto(`#gw-new`, other.URL), click(`#gw-add`), wait(`#gw-list li[data-index="1"] .gw-up`),
			click(`#gw-list li[data-index="1"] .gw-up`), wait(`#gw-list li[data-index="1"] .gw-down[disabled]`),
			eval(`document.querySelector('#gw-list li[data-index="0"] input').value`, &first),
			click(`#settings-review-btn`), wait(`#settings[data-state="reviewed"]`), text(`#settings-diff`, &diff),
			click(`#settings-apply`), wait(`#settings[data-state="applied"]`))
		if err != nil {
			t.Fatalf("browser: %v", err)
		}
		if first != other.URL || !strings.Contains(diff, "added "+other.URL) {
			t.Fatalf("after moving the new gateway up: first %q, review %q", first, diff)
		}
		if g := w.settings(t).Settings.Gateway; len(g) != 2 || g[0] != other.URL || g[1] != good.URL {
			t.Fatalf("live gateways %v, want [%s %s]", g, other.URL, good.URL)
		}
		err = chromedp.Do(ctx, click(`#gw-list li[data-index="1"] .gw-remove`), wait(`#settings[data-state="loaded"]`),
			click(`#settings-review-btn`), wait(`#settings[data-state="reviewed"]`), text(`#settings-diff`, &diff),
			click(`#settings-apply`), wait(`#settings[data-state="applied"]`))
		if err != nil {
			t.Fatalf("browser: %v", err)
		}
		if !strings.Contains(diff, "removed "+good.URL) {
			t.Errorf("review %q, want the removal", diff)
		}
		if g := w.settings(t).Settings.Gateway; len(g) != 1 || g[0] != other.URL {
			t.Fatalf("live gateways %v, want [%s]", g, other.URL)
		}
		before := good.Requests()
		if code, via := w.get(t); code != 200 || via != "other" || good.Requests() != before {
			t.Fatalf("after removing the first gateway: %d via %q (removed gateway %d → %d requests)", code, via, before, good.Requests())
		}
	})

	t.Run("OPS-7/a-change-made-elsewhere-shows-on-an-idle-form", func(t *testing.T) {
		ctx := browser(t)
		if err := chromedp.Do(ctx, chromedp.Navigate(page), wait(`#settings[data-state="loaded"]`)); err != nil {
			t.Fatalf("browser: %v", err)
		}
		w.change(t, `{"cooldown-ms": 12000}`)
		if err := chromedp.Do(ctx, until(`document.getElementById("set-cooldown-ms").value === "12000"`)); err != nil {
			t.Fatalf("the form does not show a change made by another client: %v", err)
		}
	})
}
