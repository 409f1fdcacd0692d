//go:build browser && linux

package pool

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/config"
)

// The pool page's script shows a failed reload from /pool/status and hides
// it again once a reload succeeded (SPEC POOL-16, POOL-22). The page and
// the status come from two pools, one whose last reload failed and one
// whose did not, so the script's rendering is checked apart from the
// failure the server writes into the page it sends (page.go).
func TestReloadFailureOnPageInChromium(t *testing.T) {
	const yml = "channels:\n  a: {api: anthropic, base_url: 'http://127.0.0.1:9', api_key: sk-SECRET-1}\npools:\n  p: {members: [a]}\n"
	cfg, err := config.ParseConfig([]byte(yml), nil)
	if err != nil {
		t.Fatal(err)
	}
	clean := New(cfg, Options{})
	failed := New(cfg, Options{ConfigFile: "/etc/pools.yaml"})
	_, bad := config.ParseConfig([]byte(yml+"  p: {members: [a]}\n  q: {members: [nosuch]}\n"), nil)
	if bad == nil {
		t.Fatal("setup: the broken config parsed")
	}
	failed.ReloadFailed(bad)
	errs := failed.Status().Config.ReloadErrors
	if len(errs) < 2 {
		t.Fatalf("setup: want two errors, got %q", errs)
	}
	serve := func(page, status http.Handler) string {
		mux := http.NewServeMux()
		mux.Handle("/pool/", page)
		mux.Handle("/pool/status", status)
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		return srv.URL + "/pool/"
	}
	box := regexp.MustCompile(`<div id="reload"[^>]*>.*?</ul></div>|<div id="reload"[^>]*></div>`)
	t.Run("POOL-16/page-script-shows-a-failed-reload", func(t *testing.T) {
		dom := page(t, serve(clean, failed))
		got := box.FindString(dom)
		if !strings.Contains(dom, `data-rendered=`) || !strings.HasPrefix(got, `<div id="reload" class="verdict" data-level="down" data-failed="true"><div>Configuration NOT reloaded at `) ||
			!regexp.MustCompile(`at \d\d:\d\d:\d\d: the one loaded at \d\d:\d\d:\d\d still serves until /etc/pools.yaml reads without errors`).MatchString(got) {
			t.Fatalf("no failed reload shown: %q\n%s", got, dom)
		}
		for _, e := range errs {
			if !strings.Contains(got, "<li><code>"+htmlText(e)+"</code></li>") {
				t.Errorf("error %q not listed in %q", e, got)
			}
		}
		if strings.Contains(dom, "SECRET") {
			t.Error("a key on the page")
		}
	})
	t.Run("POOL-16/page-script-hides-it-after-a-good-reload", func(t *testing.T) {
		dom := page(t, serve(failed, clean))
		if got := box.FindString(dom); !strings.Contains(dom, `data-rendered=`) || !strings.HasSuffix(got, "></div>") || strings.Contains(got, "<ul>") ||
			!strings.Contains(got, ` hidden=""`) || !strings.Contains(got, ` data-failed="false"`) {
			t.Fatalf("failure still shown after a good status: %q\n%s", got, dom)
		}
	})
}

// htmlText is s as the DOM dump serializes text (&, <, > escaped).
func htmlText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
