package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// -tool on a Responses channel calls a tool the request offers as a
// freeform "custom" tool (Codex nests its tools in an additional_tools
// item) as the API does, a custom_tool_call whose input is -tool-args'
// "input"; a function tool stays a function_call; a custom tool's output
// ends the loop.
func TestCustomToolFlag(t *testing.T) {
	defer goleak.VerifyNone(t)
	o := options{api: "responses", tool: "exec", toolArgs: `{"input":"text(1)"}`, reply: "ok", failStatus: 529}
	srv := httptest.NewServer(o.channel())
	defer srv.Close()
	post := func(t *testing.T, body string) string {
		t.Helper()
		resp, err := http.Post(srv.URL+"/v1/responses", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	t.Run("POOL-21/custom-tool-called-as-custom-tool-call", func(t *testing.T) {
		got := post(t, `{"model":"m","input":[{"type":"additional_tools","tools":[{"type":"namespace","name":"functions","tools":[{"type":"custom","name":"exec"}]}]},{"role":"user","content":"hi"}]}`)
		if !strings.Contains(got, `"type":"custom_tool_call"`) || !strings.Contains(got, `"input":"text(1)"`) {
			t.Fatalf("answer %s, want a custom_tool_call with input text(1)", got)
		}
	})
	t.Run("POOL-21/function-tool-called-as-function-call", func(t *testing.T) {
		got := post(t, `{"model":"m","tools":[{"type":"function","name":"exec","parameters":{}}],"input":"hi"}`)
		if !strings.Contains(got, `"type":"function_call"`) || strings.Contains(got, "custom_tool_call") {
			t.Fatalf("answer %s, want a function_call", got)
		}
	})
	t.Run("POOL-21/custom-tool-output-answered-with-reply", func(t *testing.T) {
		got := post(t, `{"model":"m","input":[{"type":"custom_tool_call","call_id":"c","name":"exec","input":"x"},{"type":"custom_tool_call_output","call_id":"c","output":"1"}],"tools":[{"type":"custom","name":"exec"}]}`)
		if !strings.Contains(got, `"text":"ok"`) {
			t.Fatalf("answer %s, want the reply", got)
		}
	})
}
