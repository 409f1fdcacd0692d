package mockllm

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A Responses channel calls a freeform tool as the API does: a
// custom_tool_call item whose input is plain text, in the document and in
// the stream (response.custom_tool_call_input.delta and .done).
func TestCustomToolCall(t *testing.T) {
	ch := &Channel{API: Responses, Turns: []Turn{{ToolCalls: []ToolCall{{ID: "call_1", Name: "exec", Args: `text("hi")`, Custom: true}}}}}
	srv := httptest.NewServer(ch)
	defer srv.Close()
	for _, c := range []struct {
		name, stream string
		want         []string
	}{
		{"document", "false", []string{`"type":"custom_tool_call"`, `"input":"text(\"hi\")"`, `"call_id":"call_1"`}},
		{"stream", "true", []string{"response.custom_tool_call_input.delta", `"input":"text(\"hi\")"`, `"type":"custom_tool_call"`}},
	} {
		t.Run("POOL-21/responses-custom-tool-call-"+c.name, func(t *testing.T) {
			resp, err := http.Post(srv.URL+"/v1/responses", "application/json", strings.NewReader(`{"model":"m","stream":`+c.stream+`,"input":"hi"}`))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			for _, w := range c.want {
				if !strings.Contains(string(b), w) {
					t.Fatalf("answer lacks %s:\n%s", w, b)
				}
			}
			if strings.Contains(string(b), "function_call") {
				t.Fatalf("a freeform call answered as a function call:\n%s", b)
			}
		})
	}
}
