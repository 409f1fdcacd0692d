package mockllm

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

var paths = map[string]string{Anthropic: "/v1/messages", Chat: "/v1/chat/completions", Responses: "/v1/responses", Gemini: "/v1beta/models/m:generateContent"}

func TestSpeaksOnlyItsAPI(t *testing.T) {
	for api := range paths {
		t.Run("POOL-21/mock-speaks-only-"+api, func(t *testing.T) {
			srv := httptest.NewServer(&Channel{API: api, Turns: []Turn{{Text: "hi ✓"}}})
			defer srv.Close()
			for other, p := range paths {
				resp, err := http.Post(srv.URL+p, "application/json", strings.NewReader(`{"model":"m"}`))
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if want := other == api; (resp.StatusCode == 200) != want {
					t.Fatalf("%s on %s: %d %s", p, api, resp.StatusCode, b)
				}
				if other == api && !strings.Contains(string(b), "hi ✓") {
					t.Fatalf("answer %s", b)
				}
			}
		})
	}
}

func TestScriptedFailures(t *testing.T) {
	ch := &Channel{API: Chat, Turns: []Turn{{Status: 529}, {Text: "abc", FailAfterOutput: true}, {Text: "fine"}}}
	srv := httptest.NewServer(ch)
	defer srv.Close()
	// post takes the subtest's t, so a failure is reported under its name.
	post := func(t *testing.T, stream bool) (int, string) {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"model": "m", "stream": stream})
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	t.Run("POOL-7/mock-fails-before-output", func(t *testing.T) {
		if st, b := post(t, true); st != 529 || !strings.Contains(b, "server_error") {
			t.Fatalf("%d %s", st, b)
		}
	})
	t.Run("POOL-7/mock-fails-after-output", func(t *testing.T) {
		st, b := post(t, true)
		if st != 200 || !strings.Contains(b, `"content":"a"`) || !strings.Contains(b, `"error"`) || strings.Contains(b, "[DONE]") {
			t.Fatalf("%d %s", st, b)
		}
	})
	t.Run("POOL-7/mock-last-turn-repeats", func(t *testing.T) {
		for range 2 {
			if st, b := post(t, false); st != 200 || !strings.Contains(b, "fine") {
				t.Fatalf("%d %s", st, b)
			}
		}
		if n := len(ch.Calls()); n != 4 {
			t.Fatalf("%d calls recorded", n)
		}
	})
}
