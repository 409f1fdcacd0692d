package status

import (
	"bytes"
	_ "embed"
	"fmt"
	"html"
	"net/http"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/api"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
	"github.com/dual-proxy/dual-proxy/pool/editor"
)

// pageHTML is the pool status page: a self-contained HTML
// document (no external resources) that polls GET /pool/status every 2 s and
// renders pools, members (state, cooldown, counts, bound sessions, cache hit
// ratio), per-session bindings, the last 200 calls, and a test button per
// unified model that calls POST /pool/{pool}/test?model=M.
//
// The test endpoint needs the pool token like every /pool/{pool}/… path.
// The page reads it from its URL fragment — /pool/#token=T — which browsers
// never send to the server or put in Referer headers. Page options in the
// query: autotest=MODEL (and optionally autopool=POOL) clicks that model's
// test button once after the first render (used by the headless browser
// test); the document's data-autotest attribute becomes "done" when the
// test's result is shown.
//
//go:embed page.html
var pageHTML []byte

// ServePage answers GET/HEAD /pool/ with pageHTML. Its data comes from
// /pool/status (no secrets), which needs no token; the one thing the page
// carries as sent is conf's failed reload, if any (reloadHTML), so a fetch of
// the page without script shows it too. With editing set, the editor's section
// (editor.Section: its own markup, style and script) is added before </body>.
func ServePage(w http.ResponseWriter, r *http.Request, editing bool, conf ConfigState) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		api.WriteError(w, api.For(apikind.Anthropic), http.StatusMethodNotAllowed, "use GET", nil)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	// Inline script and style only; fetches go to this origin.
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	page := pageHTML
	if len(conf.ReloadErrors) > 0 {
		page = bytes.Replace(page, reloadSlot, reloadHTML(conf, time.Local), 1)
	}
	if !editing {
		_, _ = w.Write(page)
		return
	}
	i := bytes.LastIndex(page, []byte("</body>"))
	if i < 0 {
		i = len(page)
	}
	_, _ = w.Write(page[:i])
	_, _ = w.Write(editor.Section)
	_, _ = w.Write(page[i:])
}

// reloadSlot is pageHTML's empty box for a failed reload, which the page's
// script fills from /pool/status on each refresh (renderReload).
var reloadSlot = []byte(`<div id="reload" class="verdict" data-level="down" hidden></div>`)

// reloadHTML is the box for c's failed reload: when
// the re-read failed, that the configuration loaded before still serves,
// and every error (FILE:LINE:COL: PATH: MSG), times as HH:MM:SS in loc,
// the same markup as the script's renderReload. The errors name paths and
// values of the file, never a key (config errors redact them).
func reloadHTML(c ConfigState, loc *time.Location) []byte {
	clock := func(t time.Time) string { return t.In(loc).Format(time.TimeOnly) }
	failed := ""
	if c.ReloadFailedAt != nil {
		failed = clock(*c.ReloadFailedAt)
	}
	file := c.File
	if file == "" {
		file = "the file"
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `<div id="reload" class="verdict" data-level="down" data-failed="true"><div>Configuration NOT reloaded at %s: the one loaded at %s still serves until %s reads without errors (fix it, then SIGHUP or save in the editor):</div><ul>`,
		failed, clock(c.LoadedAt), html.EscapeString(file))
	for _, e := range c.ReloadErrors {
		fmt.Fprintf(&b, "<li><code>%s</code></li>", html.EscapeString(e))
	}
	b.WriteString("</ul></div>")
	return b.Bytes()
}
