package settings_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/app/settings"
)

// fields are the fields of a 400 answer's errors, in order.
func fields(t *testing.T, doc map[string]any) []string {
	t.Helper()
	var out []string
	errs, _ := doc["errors"].([]any)
	for _, e := range errs {
		f, _ := e.(map[string]any)["field"].(string)
		out = append(out, f)
	}
	return out
}

// TestRefusedValues: every value is checked whether it is in use or not,
// a null or a wrong type is a field error, and no error, document or
// answer repeats a value that may be a secret (SPEC OPS-7).
func TestRefusedValues(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       string // the fields, space-separated
	}{
		{"OPS-7/null-gateway-item-refused", `{"gateway": [null]}`, "gateway[0]"},
		{"OPS-7/null-after-a-gateway-refused-not-dropped", `{"gateway": ["127.0.0.1:3128", null]}`, "gateway[1]"},
		{"OPS-7/empty-gateway-item-refused", `{"gateway": ["127.0.0.1:3128", " "]}`, "gateway[1]"},
		{"OPS-7/number-gateway-item-refused", `{"gateway": [3128]}`, "gateway[0]"},
		{"OPS-7/null-pattern-refused", `{"prefer-direct": ["*.lan", null]}`, "prefer-direct[1]"},
		{"OPS-7/object-for-a-list-refused", `{"gateway": {"a": 1}}`, "gateway"},
		{"OPS-7/object-for-a-number-refused", `{"cooldown-ms": {"a": 1}}`, "cooldown-ms"},
		{"OPS-7/crlf-in-upstream-host-refused", `{"upstream-host": "127.0.0.3\r\nX-Injected: 1"}`, "upstream-host"},
		{"OPS-7/crlf-in-upstream-host-refused-while-upstream-url-overrides-it", `{"upstream-url": "http://127.0.0.1:3128", "upstream-host": "127.0.0.3\r\nX-Injected: 1"}`, "upstream-host"},
		{"OPS-7/credentials-in-upstream-host-refused", `{"upstream-host": "huser:PW@[::1"}`, "upstream-host"},
		{"OPS-7/credentials-in-upstream-host-refused-while-unused", `{"upstream-url": "http://127.0.0.1:3128", "upstream-host": "huser:PW@[::1"}`, "upstream-host"},
		{"OPS-7/unterminated-upstream-url-refused", `{"upstream-url": "http://huser:PW@[::1"}`, "upstream-url"},
		{"OPS-7/crlf-in-upstream-url-refused", `{"upstream-url": "http://127.0.0.1:3128\r\nX: 1"}`, "upstream-url"},
		{"OPS-7/port-in-upstream-host-refused", `{"upstream-host": "127.0.0.1:3128"}`, "upstream-host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := newInstance(t, settings.Options{})
			v := in.version(t)
			code, doc := in.put(t, tc.body, v)
			if got := strings.Join(fields(t, doc), " "); code != 400 || got != tc.want {
				t.Fatalf("PUT %d fields %q, want 400 %q (%v)", code, got, tc.want, doc)
			}
			if in.version(t) != v || in.applies() != 1 {
				t.Fatal("a refused change applied something")
			}
			b, _ := json.Marshal(doc)
			for _, secret := range []string{"PW", "X-Injected"} {
				if bytes.Contains(b, []byte(secret)) {
					t.Fatalf("the answer repeats the value: %s", b)
				}
			}
		})
	}
	t.Run("OPS-7/bare-ipv6-upstream-host-accepted-and-shown", func(t *testing.T) {
		in := newInstance(t, settings.Options{})
		code, doc := in.put(t, `{"upstream-host": "::1"}`, in.version(t))
		if code != 200 || doc["settings"].(map[string]any)["upstream-host"] != "::1" {
			t.Fatal(code, doc)
		}
	})
	t.Run("OPS-7/credentials-in-upstream-host-refused-at-start", func(t *testing.T) {
		_, fes := settings.Check(with(startValues(), settings.UpstreamHost, "huser:PW@[::1"), settings.Env{})
		if len(fes) != 1 || fes[0].Field != settings.UpstreamHost || strings.Contains(fes[0].Message, "PW") {
			t.Fatalf("errors %v", fes)
		}
	})
	t.Run("OPS-7/errors-never-repeat-a-value", func(t *testing.T) {
		in := newInstance(t, settings.Options{})
		const key = "sk-ant-api03-SECRETSECRET"
		body := fmt.Sprintf(`{"cooldown-ms": %q, "gateway": [%q, "socks4://%s@h:1", "%s:99999"], "log-level": %q, "upstream-host": %q, "upstream-url": %q, "health-url": %q, "verify-tls": %q}`,
			key, key, key, key, key, key+"@h", "ftp://"+key, "http://"+key+"@"+key, key)
		code, doc := in.put(t, body, in.version(t))
		b, _ := json.Marshal(doc)
		if code != 400 || bytes.Contains(b, []byte("SECRET")) {
			t.Fatalf("PUT %d: the answer repeats a value: %s", code, b)
		}
		if n := len(fields(t, doc)); n < 7 {
			t.Fatalf("want every bad field named, got %d: %s", n, b)
		}
	})
	t.Run("OPS-7/file-errors-never-repeat-a-value", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config.yaml")
		const key = "sk-ant-api03-SECRETSECRET"
		text := "proxy:\n  cooldown-ms: " + key + "\n  gateway: [" + key + "]\n  log-level: " + key + "\n  upstream-host: 'u:" + key + "@h'\n"
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		in := newInstance(t, settings.Options{File: path})
		err := in.live.Reload()
		doc, _ := json.Marshal(in.live.Document())
		if err == nil || strings.Contains(err.Error(), "SECRET") || bytes.Contains(doc, []byte("SECRET")) {
			t.Fatalf("reload error %v; document %s", err, doc)
		}
	})
}

// TestRefusedChangeIsSmall: a body of many thousand unknown keys is
// answered with the first MaxNamedErrors named and the count, in a few
// KB, and the instance does not hold on to memory for it (SPEC OPS-7).
func TestRefusedChangeIsSmall(t *testing.T) {
	in := newInstance(t, settings.Options{})
	v := in.version(t)
	var b strings.Builder
	b.WriteString("{")
	n := 0
	for b.Len() < 1<<20-32 {
		if n > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"k%06d":1`, n)
		n++
	}
	b.WriteString("}")
	if n < 80000 {
		t.Fatalf("only %d keys", n)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	req, _ := http.NewRequest(http.MethodPut, in.srv.URL+settings.Path, strings.NewReader(b.String()))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("If-Match", `"`+v+`"`)
	resp, err := in.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	runtime.ReadMemStats(&after)
	if resp.StatusCode != 400 || len(body) > 16<<10 {
		t.Fatalf("PUT %d, %d bytes answered", resp.StatusCode, len(body))
	}
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	errs := doc["errors"].([]any)
	last := errs[len(errs)-1].(map[string]any)["message"].(string)
	if len(errs) != settings.MaxNamedErrors+1 || !strings.Contains(last, fmt.Sprintf("%d errors in all", n)) {
		t.Fatalf("%d errors, last %q", len(errs), last)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 96<<20 {
		t.Fatalf("one refused PUT allocated %d MB", alloc>>20)
	}
	t.Logf("%d keys in %d bytes: %d bytes answered, %d MB allocated", n, b.Len(), len(body), (after.TotalAlloc-before.TotalAlloc)>>20)
}

// TestEmptyFirstGateway: upstream-url ” is no first gateway, from the
// API and the file alike; null (not given) is upstream-host:upstream-port
// (SPEC GW-1, OPS-7).
func TestEmptyFirstGateway(t *testing.T) {
	firstGateway := func(r *settings.Resolved) bool { return r.Spec.UpstreamURL != "" || r.Spec.UpstreamHost != "" }
	t.Run("OPS-7/api-empty-upstream-url-then-null", func(t *testing.T) {
		in := newInstance(t, settings.Options{})
		if !firstGateway(in.live.Current()) {
			t.Fatal("not given: the first gateway is upstream-host:upstream-port")
		}
		code, doc := in.put(t, `{"upstream-url": ""}`, in.version(t))
		if code != 200 || doc["settings"].(map[string]any)["upstream-url"] != "" || firstGateway(in.live.Current()) {
			t.Fatalf("PUT '' %d %v; spec %+v", code, doc["settings"], in.live.Current().Spec)
		}
		code, doc = in.put(t, `{"upstream-url": null}`, in.version(t))
		if v, ok := doc["settings"].(map[string]any)["upstream-url"]; code != 200 || !ok || v != nil || !firstGateway(in.live.Current()) {
			t.Fatalf("PUT null %d %v", code, doc["settings"])
		}
	})
	t.Run("OPS-7/file-empty-upstream-url", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(path, []byte("proxy:\n  upstream-url: ''\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		in := newInstance(t, settings.Options{File: path})
		if err := in.live.Reload(); err != nil || firstGateway(in.live.Current()) {
			t.Fatalf("reload %v; spec %+v", err, in.live.Current().Spec)
		}
	})
}
