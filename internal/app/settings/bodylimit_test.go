package settings_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/app/settings"
)

// TestBodyOverTheLimitIs413: a change or a gateway test whose body is
// over 1 MiB is answered 413 Content Too Large (RFC 9110 §15.5.14) with
// the limit in the message, whether its Content-Length announces it or
// it is found while reading; a body of exactly the limit is read (SPEC
// OPS-7).
func TestBodyOverTheLimitIs413(t *testing.T) {
	const limit = 1 << 20
	in := newInstance(t, settings.Options{})
	send := func(t *testing.T, method, path string, body io.Reader, version string) (int, map[string]any) {
		t.Helper()
		req, err := http.NewRequest(method, in.srv.URL+path, body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("If-Match", `"`+version+`"`)
		resp, err := in.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var doc map[string]any
		b, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf("%s: not JSON: %q", resp.Status, b)
		}
		return resp.StatusCode, doc
	}
	// padded is a JSON object of n bytes: a change of cooldown-ms and spaces.
	padded := func(n int) string {
		s := `{"cooldown-ms": 1500}`
		return s[:len(s)-1] + strings.Repeat(" ", n-len(s)) + "}"
	}
	tooLarge := func(t *testing.T, code int, doc map[string]any) {
		t.Helper()
		msg, _ := doc["error"].(string)
		if code != http.StatusRequestEntityTooLarge || !strings.Contains(msg, "1 MiB") || !strings.Contains(msg, "1048576 bytes") {
			t.Fatalf("%d %v, want 413 naming the limit", code, doc)
		}
	}
	t.Run("OPS-7/change-over-1-MiB-announced-is-413", func(t *testing.T) {
		v := in.version(t)
		code, doc := send(t, http.MethodPut, settings.Path, strings.NewReader(padded(limit+1)), v)
		tooLarge(t, code, doc)
		if in.version(t) != v {
			t.Fatal("a refused change applied something")
		}
	})
	t.Run("OPS-7/change-over-1-MiB-streamed-is-413", func(t *testing.T) {
		v := in.version(t)
		// A reader that is no *strings.Reader: sent chunked, no length known.
		code, doc := send(t, http.MethodPut, settings.Path, io.MultiReader(strings.NewReader(padded(limit+1))), v)
		tooLarge(t, code, doc)
		if in.version(t) != v {
			t.Fatal("a refused change applied something")
		}
	})
	t.Run("OPS-7/gateway-test-over-1-MiB-is-413", func(t *testing.T) {
		body := `{"gateway": "127.0.0.1:9"` + strings.Repeat(" ", limit) + "}"
		code, doc := send(t, http.MethodPost, settings.ProbePath, strings.NewReader(body), "")
		tooLarge(t, code, doc)
	})
	t.Run("OPS-7/change-of-exactly-1-MiB-applies", func(t *testing.T) {
		code, doc := send(t, http.MethodPut, settings.Path, strings.NewReader(padded(limit)), in.version(t))
		if code != 200 || doc["settings"].(map[string]any)["cooldown-ms"] != 1500.0 {
			t.Fatal(code, doc)
		}
	})
}
