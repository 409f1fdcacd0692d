package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/pool"
	"github.com/dual-proxy/dual-proxy/pool/config"
	"github.com/dual-proxy/dual-proxy/proxy"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
)

// Hostile escapes: an OSC that retitles the terminal and a CSI that
// clears it.
const (
	oscTitle = "\x1b]0;pwned\a"
	csiClear = "\x1b[2J"
)

func TestTermWriter(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain-text-tab-newline-pass", "pool\tp\nmodel\tm-ü·…🧑\n", "pool\tp\nmodel\tm-ü·…🧑\n"},
		{"osc-title", "m" + oscTitle, `m\x1b]0;pwned\x07`},
		{"csi-clear", csiClear + "x", `\x1b[2Jx`},
		{"carriage-return-and-backspace", "ok\rFAIL\b", `ok\x0dFAIL\x08`},
		{"del-and-c1-csi", "a\x7fb\u009bc", `a\u007fb\u009bc`},
		{"invalid-utf8-byte", "a\x9b[2Jb", `a\x9b[2Jb`},
		{"bidi-override", "a\u202eb", `a\u202eb`},
		{"beyond-the-bmp", "a\U000e0001b", `a\udb40\udc01b`},
	} {
		t.Run("OPS-2/escapes-"+tc.name, func(t *testing.T) {
			var b bytes.Buffer
			n, err := termSafe(&b).Write([]byte(tc.in))
			if err != nil || n != len(tc.in) || b.String() != tc.want {
				t.Fatalf("Write(%q) = %d, %v, wrote %q; want %q", tc.in, n, err, b.String(), tc.want)
			}
		})
	}
	t.Run("OPS-2/escaped-json-reads-back-the-same", func(t *testing.T) {
		in := map[string]string{"model": "m" + oscTitle + csiClear + "\x7f\u009b\u202e\U000e0001 ü"}
		raw, _ := json.Marshal(in)
		var b bytes.Buffer
		termSafe(&b).Write(raw)
		var out map[string]string
		if err := json.Unmarshal(b.Bytes(), &out); err != nil || out["model"] != in["model"] {
			t.Fatalf("escaped JSON %s: %v, %q", b.Bytes(), err, out["model"])
		}
		if bytes.ContainsAny(b.Bytes(), "\x1b\a\x7f\u009b\u202e") {
			t.Fatalf("raw controls left: %q", b.Bytes())
		}
	})
}

// TestHostileStringsEscaped: model and member ids of a configuration, a
// model id on the command line and a channel's error message carrying
// terminal escapes reach `pool test` and `status`
// text output escaped (SPEC POOL-14, OPS-2: printed raw, a broken
// or hostile channel could retitle or clear the user's terminal).
func TestHostileStringsEscaped(t *testing.T) {
	msg := "Overloaded " + oscTitle + csiClear
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(529)
		b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": "overloaded_error", "message": msg}})
		w.Write(b)
	}))
	t.Cleanup(up.Close)
	// A configuration file refuses such ids (SPEC POOL-3), a configuration
	// built in code (pool is a library) is not checked: the ids get them
	// after parsing.
	yml := fmt.Sprintf(`channels:
  up: {api: anthropic, base_url: %q, api_key: sk-SECRET-1}
pools:
  p:
    members: [up]
    models:
      - id: m
        targets: {up: t}
      - id: plain
        targets: {up: t}
`, up.URL)
	cfg, err := config.ParseConfig([]byte(yml), nil)
	if err != nil {
		t.Fatal(err)
	}
	chID, modelID := "up\x1b[2J", "m\x1b]0;pwned\a"
	cfg.Channels[0].ID, cfg.Pools[0].Members[0] = chID, chID
	m := &cfg.Pools[0].Models[0]
	m.ID, m.Name, m.Targets = modelID, modelID, map[string]string{chID: "t\x1b[2J"}
	cfg.Pools[0].Models[1].Targets = map[string]string{chID: "t"}
	mux := proxy.NewMux()
	srv, err := proxy.New(proxy.Config{Candidates: []candidate.Candidate{candidate.Direct}, Cooldown: 30 * time.Second, Handler: mux})
	if err != nil {
		t.Fatal(err)
	}
	mux.Attach(srv)
	p := pool.New(cfg, pool.Options{Token: "tok", Transport: srv.Engine().PoolRoundTripper()})
	t.Cleanup(func() { p.Close() })
	mux.Handle("/pool/", p)
	addr := testkit.Serve(t, srv)

	clean := func(t *testing.T, where, out string, want ...string) {
		t.Helper()
		if strings.ContainsAny(out, "\x1b\a") {
			t.Fatalf("%s: a raw escape reached the terminal:\n%q", where, out)
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: lacks %q:\n%s", where, w, out)
			}
		}
	}
	t.Run("POOL-14/pool-test-lists-models-escaped", func(t *testing.T) {
		out, errOut, status := runCmd(t, poolApp, nil, "pool", "test", "p", "--addr", addr)
		if status != 0 {
			t.Fatalf("status %d, %q", status, errOut)
		}
		clean(t, "pool test p", out, `m\x1b]0;pwned\x07`)
	})
	t.Run("POOL-14/pool-test-result-escaped", func(t *testing.T) {
		// A model id with a control character is refused before any
		// member is called (POOL-1), so the member's hostile error text
		// is reached with a plain id; the refusal is escaped too.
		out, errOut, status := runCmd(t, poolApp, nil, "pool", "test", "p", "plain", "--addr", addr, "--token", "tok")
		if status != 1 {
			t.Fatalf("status %d, %q %q", status, out, errOut)
		}
		clean(t, "pool test p m", out+errOut, `up\x1b[2J: server 529: Overloaded \x1b]0;pwned\x07\x1b[2J`)
		out, errOut, status = runCmd(t, poolApp, nil, "pool", "test", "p", "m"+oscTitle, "--addr", addr, "--token", "tok")
		if status != 1 {
			t.Fatalf("status %d, %q %q", status, out, errOut)
		}
		clean(t, "pool test p m+osc", out+errOut, `model     m\x1b]0;pwned\x07`, `is not a model id (control character)`)
	})
	t.Run("POOL-14/pool-test-json-unchanged-in-meaning", func(t *testing.T) {
		out, _, _ := runCmd(t, poolApp, nil, "pool", "test", "p", "m"+oscTitle, "--addr", addr, "--token", "tok", "--json")
		var res pool.TestResult
		if err := json.Unmarshal([]byte(out), &res); err != nil || res.Model != "m"+oscTitle {
			t.Fatalf("json %q: %v", out, err)
		}
		clean(t, "pool test --json", out)
	})
	t.Run("OPS-2/status-escaped", func(t *testing.T) {
		out, errOut, status := runCmd(t, DualProxy, nil, "status", "--addr", addr)
		if status != 0 {
			t.Fatalf("status %d, %q", status, errOut)
		}
		clean(t, "status", out, `p     up\x1b[2J  anthropic`)
	})
}
