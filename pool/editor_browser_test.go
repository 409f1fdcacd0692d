//go:build browser && linux

package pool

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/dual-proxy/dual-proxy/internal/testbed/mockllm"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// modelChannel is an Anthropic channel on loopback: GET /v1/models answers
// list, model calls are a mockllm channel.
func modelChannel(t *testing.T, list string) (*httptest.Server, *mockllm.Channel) {
	ch := &mockllm.Channel{API: mockllm.Anthropic}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/v1/models" {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, list)
			return
		}
		ch.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, ch
}

// browser starts headless Chromium for the test (testworld.Browser): a
// 1280x1400 window, 120 s; it ends with the test.
func browser(t *testing.T) context.Context {
	t.Helper()
	ctx, _ := newBrowser(t)
	return ctx
}

// newBrowser is browser that cancel also ends before the test's end.
func newBrowser(t *testing.T) (context.Context, context.CancelFunc) {
	t.Helper()
	return testworld.Browser(t, 1280, 1400, 120*time.Second)
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

// shot takes a PNG of the editor section; with DUAL_PROXY_SHOTS=1 it is
// saved to docs/ (pool/README.md shows them).
func shot(name string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		png, err := chromedp.Screenshot(chromedp.CSS("#editor"))(ctx, tg)
		if err != nil {
			return chromedp.Void{}, err
		}
		if len(png) == 0 || os.Getenv("DUAL_PROXY_SHOTS") != "1" {
			return chromedp.Void{}, nil // docs/ is rewritten only when asked (README)
		}
		return chromedp.Void{}, os.WriteFile(filepath.Join("..", "docs", name), png, 0o644)
	}
}

const editorFile = `# team channels: edited from the page too
channels:
  # the first account
  ch1: {api: anthropic, base_url: %s, api_key_env: CH1_KEY}
  ch2:
    api: anthropic
    base_url: %s
    api_key: sk-ch2-SECRET-literal # typed once
pools:
  old: {members: [ch1]} # kept as it is
`

func TestEditorInChromium(t *testing.T) {
	s1, m1 := modelChannel(t, `{"data":[{"type":"model","id":"m-shared","max_input_tokens":200000},{"type":"model","id":"only-one"}]}`)
	s2, m2 := modelChannel(t, `{"data":[{"type":"model","id":"m-shared-20250101","max_input_tokens":128000}]}`)
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	orig := fmt.Sprintf(editorFile, s1.URL, s2.URL)
	if err := os.WriteFile(path, []byte(orig), 0o600); err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string {
		if k == "CH1_KEY" {
			return "sk-ch1-SECRET-env"
		}
		return ""
	}
	cfg, err := config.LoadConfig(path, getenv)
	if err != nil {
		t.Fatal(err)
	}
	p := New(cfg, Options{Token: "tok", ConfigFile: path, Getenv: getenv})
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	page := srv.URL + "/pool/#token=tok"

	t.Run("POOL-22/add-pool-gather-map-save-then-call", func(t *testing.T) {
		ctx := browser(t)
		var diff string
		err := chromedp.Do(ctx, chromedp.Navigate(page), wait(`#editor[data-state="loaded"]`),
			typeInto(`#ed-new-id`, "team"), click(`#ed-new-pool`), wait(`fieldset[data-pool="team"]`),
			typeInto(`input[data-field="pools.team.display_name"]`, "Team pool"),
			click(`fieldset[data-pool="team"] button[data-add-member="ch1"]`),
			click(`fieldset[data-pool="team"] button[data-add-member="ch2"]`),
			click(`button[data-gather="team"]`), wait(`#editor[data-gathered="team"]`), wait(`[data-proposal="m-shared"]`),
			click(`button[data-use="m-shared"]`), wait(`table[data-models="team"] tr[data-model="m-shared"]`),
			typeInto(`input[data-field="pools.team.models[0].id"]`, "unified"),
			shot("pool-editor.png"),
			click(`#ed-review`), wait(`#editor[data-state="reviewed"]`), text(`#ed-diff`, &diff),
			click(`#ed-save`), wait(`#editor[data-state="saved"]`))
		if err != nil {
			t.Fatalf("browser: %v", err)
		}
		for _, want := range []string{"+   team:", "+     display_name: Team pool", "+     members: [ch1, ch2]", "+       - id: unified", "ch2: m-shared-20250101"} {
			if !strings.Contains(diff, want) {
				t.Errorf("diff lacks %q:\n%s", want, diff)
			}
		}
		if strings.Contains(diff, "SECRET") {
			t.Fatal("POOL-15: a key on the page")
		}
		saved, _ := os.ReadFile(path)
		for _, want := range []string{"# team channels: edited from the page too", "# the first account", "# typed once", "# kept as it is", "api_key: sk-ch2-SECRET-literal"} {
			if !strings.Contains(string(saved), want) {
				t.Errorf("saved file lacks %q:\n%s", want, saved)
			}
		}
		// A real call through the new pool, as an agent makes it.
		for _, session := range []string{"s-a", "s-b"} {
			req, _ := http.NewRequest("POST", srv.URL+"/pool/team/v1/messages", strings.NewReader(`{"model":"unified","max_tokens":16,"stream":true,"messages":[{"role":"user","content":"hi"}]}`))
			req.Header.Set("Authorization", "Bearer tok")
			req.Header.Set("X-Session-Id", session)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(string(body), "message_stop") {
				t.Fatalf("call through the saved pool: %d %s", resp.StatusCode, body)
			}
		}
		// Test one member from the page: the call goes to ch2 only.
		var res string
		before := len(m1.Calls())
		if err := chromedp.Do(ctx, click(`fieldset[data-pool="team"] button[data-test-member="ch2"]`),
			wait(`#ed-msg[data-tested]`), text(`#ed-msg`, &res)); err != nil {
			t.Fatalf("browser: %v", err)
		}
		if !strings.HasPrefix(res, "test ok: member ch2") || len(m1.Calls()) != before {
			t.Fatalf("member test: %q (ch1 calls %d → %d)", res, before, len(m1.Calls()))
		}
		models := map[string]bool{}
		for _, m := range []*mockllm.Channel{m1, m2} {
			for _, c := range m.Calls() {
				if c.Method == "POST" {
					models[fmt.Sprint(c.Body["model"])] = true
				}
			}
		}
		if !models["m-shared"] || !models["m-shared-20250101"] {
			t.Fatalf("members got models %v, want each its own target", models)
		}
	})

	t.Run("POOL-22/wrong-base-url-shown-at-field-nothing-saved", func(t *testing.T) {
		before, _ := os.ReadFile(path)
		ctx := browser(t)
		var fieldErr string
		err := chromedp.Do(ctx, chromedp.Navigate(page), wait(`#editor[data-state="loaded"]`),
			typeInto(`input[data-field="channels.ch2.base_url"]`, "htp://127.0.0.1:1"),
			typeInto(`#ed-new-id`, "broken"), click(`#ed-new-pool`), wait(`fieldset[data-pool="broken"]`),
			click(`fieldset[data-pool="broken"] button[data-add-member="ch2"]`),
			click(`button[data-gather="broken"]`), wait(`#editor[data-gathered="broken"]`),
			click(`#ed-review`), wait(`#editor[data-state="invalid"]`),
			text(`.ed-err[data-path="channels.ch2.base_url"]`, &fieldErr),
			shot("pool-editor-error.png"))
		if err != nil {
			t.Fatalf("browser: %v", err)
		}
		if !strings.Contains(fieldErr, "base_url must be an absolute http:// or https:// URL") {
			t.Fatalf("error at channels.ch2.base_url: %q", fieldErr)
		}
		state, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('editor').getAttribute('data-state')`))
		if err != nil {
			t.Fatal(err)
		}
		disabled, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById('ed-save').disabled`))
		if err != nil || !disabled {
			t.Fatalf("Save enabled with errors (%v)", err)
		}
		after, _ := os.ReadFile(path)
		if string(after) != string(before) || state != "invalid" {
			t.Fatal("an invalid edit changed the file")
		}
	})

	t.Run("POOL-22/file-changed-on-disk-is-a-conflict-the-user-resolves", func(t *testing.T) {
		ctx := browser(t)
		err := chromedp.Do(ctx, chromedp.Navigate(page), wait(`#editor[data-state="loaded"]`),
			typeInto(`input[data-field="pools.old.display_name"]`, "Old pool"),
			click(`#ed-review`), wait(`#editor[data-state="reviewed"]`))
		if err != nil {
			t.Fatalf("browser: %v", err)
		}
		disk, _ := os.ReadFile(path)
		edited := string(disk) + "# edited by hand meanwhile\n"
		if err := os.WriteFile(path, []byte(edited), 0o600); err != nil {
			t.Fatal(err)
		}
		var diff string
		err = chromedp.Do(ctx, click(`#ed-save`), wait(`#editor[data-state="conflict"]`), wait(`#ed-conflict`))
		if err != nil {
			t.Fatalf("browser: %v", err)
		}
		if now, _ := os.ReadFile(path); string(now) != edited {
			t.Fatal("the conflicting save overwrote the file")
		}
		err = chromedp.Do(ctx, click(`#ed-rebase`), wait(`#editor[data-state="reviewed"]`), text(`#ed-diff`, &diff),
			click(`#ed-save`), wait(`#editor[data-state="saved"]`))
		if err != nil {
			t.Fatalf("browser: %v", err)
		}
		if !strings.Contains(diff, "+     display_name: Old pool") && !strings.Contains(diff, "display_name: Old pool") {
			t.Fatalf("diff against the new file:\n%s", diff)
		}
		now, _ := os.ReadFile(path)
		if !strings.Contains(string(now), "# edited by hand meanwhile") || !strings.Contains(string(now), "display_name: Old pool") {
			t.Fatalf("after resolving: both edits should be in the file:\n%s", now)
		}
	})

	// Every diff tool shows a changed line's old text before its new one;
	// the review must not show "+ new" above "- old".
	t.Run("POOL-22/review-diff-shows-the-old-line-before-the-new", func(t *testing.T) {
		ctx := browser(t)
		var diff string
		err := chromedp.Do(ctx, chromedp.Navigate(page), wait(`#editor[data-state="loaded"]`),
			typeInto(`input[data-field="channels.ch2.base_url"]`, s1.URL),
			click(`#ed-review`), wait(`#editor[data-state="reviewed"]`), text(`#ed-diff`, &diff))
		if err != nil {
			t.Fatalf("browser: %v", err)
		}
		var changed []string
		for _, l := range strings.Split(diff, "\n") {
			if strings.HasPrefix(l, "- ") || strings.HasPrefix(l, "+ ") {
				changed = append(changed, l)
			}
		}
		want := []string{"-     base_url: " + s2.URL, "+     base_url: " + s1.URL}
		if !slices.Equal(changed, want) {
			t.Fatalf("changed lines %q, want %q; diff:\n%s", changed, want, diff)
		}
	})

	t.Run("POOL-15/key-typed-once-written-0600-never-shown", func(t *testing.T) {
		ctx := browser(t)
		err := chromedp.Do(ctx, chromedp.Navigate(page), wait(`#editor[data-state="loaded"]`),
			typeInto(`#ed-new-id`, "ch3"), click(`#ed-new-channel`), wait(`fieldset[data-channel="ch3"]`),
			typeInto(`input[data-field="channels.ch3.base_url"]`, s2.URL),
			typeInto(`input[data-field="channels.ch3.api_key"]`, "sk-typed-SECRET-once"),
			click(`#ed-review`), wait(`#editor[data-state="reviewed"]`), click(`#ed-save`), wait(`#editor[data-state="saved"]`))
		if err != nil {
			t.Fatalf("browser: %v", err)
		}
		now, _ := os.ReadFile(path)
		fi, _ := os.Stat(path)
		if !strings.Contains(string(now), "api_key: sk-typed-SECRET-once") || fi.Mode().Perm() != 0o600 {
			t.Fatalf("mode %o, file:\n%s", fi.Mode().Perm(), now)
		}
		dom, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML + JSON.stringify(Array.from(document.querySelectorAll('input')).map(function (i) { return i.value; }))`))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(dom, "SECRET") {
			t.Fatal("a key is on the page after the save")
		}
		if !strings.Contains(dom, `placeholder="stored (kept)" data-field="channels.ch3.api_key"`) && !strings.Contains(dom, "stored (kept)") {
			t.Fatal("the stored key is not shown as kept")
		}
	})

	t.Run("POOL-22/rename-pool-from-the-page-keeps-its-comment", func(t *testing.T) {
		ctx := browser(t)
		err := chromedp.Do(ctx, chromedp.Navigate(page), wait(`#editor[data-state="loaded"]`),
			typeInto(`#ed-new-id`, "older"), click(`button[data-rename-pool="old"]`), wait(`#editor[data-state="renamed"]`),
			wait(`fieldset[data-pool="older"]`))
		if err != nil {
			t.Fatalf("browser: %v", err)
		}
		if now, _ := os.ReadFile(path); !strings.Contains(string(now), "  older:") || !strings.Contains(string(now), "# kept as it is") || strings.Contains(string(now), "  old:") {
			t.Fatalf("after the rename:\n%s", now)
		}
	})
}

// TestEditorWithoutTokenInChromium: the standalone proxy without
// --pool-token serves the editor read-only (SPEC POOL-22, POOL-20): the
// page says so as it loads, before anything is edited, and Save stays
// disabled with the reason (its tooltip), also after a valid review; a
// gather from its page is refused 403 with a message in the pool's error
// shape, which the page must show in words, not as "[object Object]".
func TestEditorWithoutTokenInChromium(t *testing.T) {
	s1, _ := modelChannel(t, `{"data":[{"type":"model","id":"m1"}]}`)
	path := filepath.Join(t.TempDir(), "config.yaml")
	orig := fmt.Sprintf("channels:\n  ch1: {api: anthropic, base_url: %s, api_key_env: CH1_KEY}\npools:\n  old: {members: [ch1]}\n", s1.URL)
	if err := os.WriteFile(path, []byte(orig), 0o600); err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string { return map[string]string{"CH1_KEY": "sk-ch1"}[k] }
	cfg, err := config.LoadConfig(path, getenv)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(New(cfg, Options{ConfigFile: path, Getenv: getenv}))
	t.Cleanup(srv.Close)
	const want = "need a pool token: start with --pool-token"
	t.Run("POOL-22/save-without-token-disabled-up-front-with-the-reason", func(t *testing.T) {
		ctx := browser(t)
		if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/pool/"), wait(`#editor[data-state="loaded"]`)); err != nil {
			t.Fatalf("browser: %v", err)
		}
		state := func() (notice, title string, disabled bool) {
			notice, _ = chromedp.Run(ctx, chromedp.Evaluate[string](`(function(){var e=document.getElementById('ed-readonly');return e.hidden?'':e.textContent})()`))
			title, _ = chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('ed-save').title`))
			disabled, _ = chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById('ed-save').disabled`))
			return
		}
		if notice, title, disabled := state(); !strings.Contains(notice, want) || !strings.Contains(title, want) || !disabled {
			t.Fatalf("as loaded: notice %q, Save title %q, disabled %v; want the reason shown and Save disabled", notice, title, disabled)
		}
		if err := chromedp.Do(ctx, typeInto(`input[data-field="pools.old.display_name"]`, "Old pool"),
			click(`#ed-review`), wait(`#editor[data-state="reviewed"]`)); err != nil {
			t.Fatalf("browser: %v", err)
		}
		got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('ed-msg').textContent`))
		if _, _, disabled := state(); !disabled || !strings.Contains(got, "cannot save: ") || !strings.Contains(got, want) {
			t.Fatalf("after a valid review: Save disabled %v, message %q", disabled, got)
		}
		if now, _ := os.ReadFile(path); string(now) != orig {
			t.Fatalf("the file changed:\n%s", now)
		}
	})
	for _, tc := range []struct{ name, prefix string }{{"gather", "gather failed: "}} {
		t.Run("POOL-22/"+tc.name+"-without-token-says-why-in-words", func(t *testing.T) {
			ctx := browser(t)
			steps := []chromedp.Action[chromedp.Void]{chromedp.Navigate(srv.URL + "/pool/"), wait(`#editor[data-state="loaded"]`),
				click(`button[data-gather="old"]`)}
			if err := chromedp.Do(ctx, steps...); err != nil {
				t.Fatalf("browser: %v", err)
			}
			var got string
			testkit.WaitFor(t, 30*time.Second, "the editor's message after a refused "+tc.name, func() bool {
				got, _ = chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('ed-msg').textContent`))
				return strings.HasPrefix(got, tc.prefix)
			})
			if !strings.Contains(got, want) || strings.Contains(got, "[object Object]") {
				t.Fatalf("message %q, want %q with %q", got, tc.prefix, want)
			}
			if now, _ := os.ReadFile(path); string(now) != orig {
				t.Fatalf("the refused %s changed the file:\n%s", tc.name, now)
			}
		})
	}
}
