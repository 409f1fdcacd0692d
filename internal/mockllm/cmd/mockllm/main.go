// Command mockllm serves one mockllm.Channel on a loopback port, for the
// real-agent tests that run inside a network namespace (internal/agentlab):
//
//	mockllm -addr 127.0.0.1:18101 -api openai-chat -log calls.jsonl \
//	        -fail-first 1 -fail-status 529 -tool Read -tool-args '{"file_path":"/x"}'
//
// -api all serves Anthropic Messages, Chat Completions and Responses on
// the one port (a model endpoint an agent is pointed at directly).
// -fail-first -1 fails every model call. Model calls that carry a tool
// result are answered with -reply; other calls that offer the tool named
// -tool get that tool call; the rest get -reply. Each request is logged as
// one JSON line (method, path, query, headers with credentials cut to 12
// characters, body, mock_status: the status a model call was answered
// with, 0 for other requests). "mockllm listening" on stderr says it is
// ready.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"

	"github.com/dual-proxy/dual-proxy/internal/mockllm"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18100", "listen address")
	api := flag.String("api", mockllm.Anthropic, "API spoken: anthropic, openai-chat, responses, gemini, all (the first three on one port)")
	logFile := flag.String("log", "", "JSON-lines request log")
	failFirst := flag.Int("fail-first", 0, "fail this many model calls first (-1: every model call)")
	failStatus := flag.Int("fail-status", 529, "status of the failed calls")
	tool := flag.String("tool", "", "tool to call when the request offers it and carries no tool result")
	toolArgs := flag.String("tool-args", "{}", "arguments of that call (JSON object)")
	reply := flag.String("reply", "ok", "text answer")
	flag.Parse()

	var mu sync.Mutex
	var log *os.File
	if *logFile != "" {
		f, err := os.OpenFile(*logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		log = f
	}
	ch := &mockllm.Channel{API: *api, FailFirst: *failFirst, FailStatus: *failStatus}
	ch.Pick = func(c mockllm.Call) *mockllm.Turn {
		raw, _ := json.Marshal(c.Body)
		s := string(raw)
		switch {
		case hasToolResult(s):
			return &mockllm.Turn{Text: *reply}
		case *tool != "" && strings.Contains(s, `"`+*tool+`"`):
			return &mockllm.Turn{ToolCalls: []mockllm.ToolCall{{ID: "call_mock_1", Name: *tool, Args: *toolArgs}}}
		}
		return &mockllm.Turn{Text: *reply}
	}
	ch.OnCall = func(c mockllm.Call) {
		if log == nil {
			return
		}
		b, _ := json.Marshal(map[string]any{"method": c.Method, "path": c.Path, "query": c.Query, "headers": redact(c.Header), "body": c.Body, "mock_status": c.Status})
		mu.Lock()
		defer mu.Unlock()
		_, _ = log.Write(append(b, '\n'))
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "mockllm listening on %s (%s)\n", ln.Addr(), *api)
	fmt.Fprintln(os.Stderr, http.Serve(ln, ch))
}

// hasToolResult tells whether a request body carries a tool result in any
// of the four APIs.
func hasToolResult(body string) bool {
	for _, marker := range []string{`"tool_result"`, `"role":"tool"`, `"function_call_output"`, `"functionResponse"`} {
		if strings.Contains(body, marker) {
			return true
		}
	}
	return false
}

// redact keeps the first 12 characters of credential headers, so a test
// can tell which key arrived without the log holding it.
func redact(h http.Header) map[string]string {
	out := map[string]string{}
	for k, vs := range h {
		v := strings.Join(vs, ", ")
		switch strings.ToLower(k) {
		case "authorization", "x-api-key", "x-goog-api-key", "proxy-authorization", "cookie", "chatgpt-account-id":
			if len(v) > 12 {
				v = v[:12] + "…"
			}
		}
		out[strings.ToLower(k)] = v
	}
	return out
}
