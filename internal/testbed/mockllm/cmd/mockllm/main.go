// Command mockllm serves one mockllm.Channel on a loopback port, for the
// real-agent tests that run inside a network namespace (internal/testbed/agentlab):
//
//	mockllm -addr 127.0.0.1:18101 -api openai-chat -log calls.jsonl \
//	        -fail-first 1 -fail-status 529 -tool Read -tool-args '{"file_path":"/x"}'
//
// -api all serves Anthropic Messages, Chat Completions and Responses on
// the one port (a model endpoint an agent is pointed at directly).
// -fail-first -1 fails every model call; -fail-from N fails the Nth model
// call and every later one (a channel that goes down mid-session). Model
// calls that carry a tool result are answered with -reply; other calls
// that offer the tool named -tool get that tool call (on -api responses, a
// custom_tool_call when the request offers it as a freeform "custom" tool,
// its input the "input" string of -tool-args); the rest get -reply.
// -thinking: an answer to a call that asks for thinking starts with
// reasoning signed by this process (an Anthropic thinking block, a Gemini
// thoughtSignature), which no other mockllm accepts. -strict refuses, with
// the provider's 400, a call holding reasoning this process did not mint,
// an Anthropic tool id outside ^[a-zA-Z0-9_-]+$ or a tool result without
// its call (mockllm.Channel.Strict). Each request is logged as
// one JSON line (method, path, query, headers with credentials cut to 12
// characters, body, mock_status: the status a model call was answered
// with, 0 for other requests); with -log-raw the line also holds raw_body,
// the body byte for byte as the client sent it (base64, as encoding/json
// writes a []byte), for recording an agent's requests (testdata/agents).
// "mockllm listening" on stderr says it is ready.
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

	"github.com/dual-proxy/dual-proxy/internal/testbed/mockllm"
)

// options are the command's flags that shape the channel.
type options struct {
	api                             string
	failFirst, failFrom, failStatus int
	strict, thinking                bool
	tool, toolArgs, reply           string
}

func main() {
	var o options
	addr := flag.String("addr", "127.0.0.1:18100", "listen address")
	flag.StringVar(&o.api, "api", mockllm.Anthropic, "API spoken: anthropic, openai-chat, responses, gemini, all (the first three on one port)")
	logFile := flag.String("log", "", "JSON-lines request log")
	logRaw := flag.Bool("log-raw", false, "add raw_body to each log line: the request body byte for byte (base64)")
	flag.IntVar(&o.failFirst, "fail-first", 0, "fail this many model calls first (-1: every model call)")
	flag.IntVar(&o.failFrom, "fail-from", 0, "fail the Nth model call and every later one (0: none)")
	flag.IntVar(&o.failStatus, "fail-status", 529, "status of the failed calls")
	flag.BoolVar(&o.strict, "strict", false, "refuse reasoning this process did not mint, Anthropic tool ids outside the alphabet and unpaired tool results (the provider's 400)")
	flag.BoolVar(&o.thinking, "thinking", false, "answer a call that asks for thinking with reasoning signed by this process first")
	flag.StringVar(&o.tool, "tool", "", "tool to call when the request offers it and carries no tool result")
	flag.StringVar(&o.toolArgs, "tool-args", "{}", "arguments of that call (JSON object)")
	flag.StringVar(&o.reply, "reply", "ok", "text answer")
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
	ch := o.channel()
	ch.OnCall = func(c mockllm.Call) {
		if log == nil {
			return
		}
		line := map[string]any{"method": c.Method, "path": c.Path, "query": c.Query, "headers": redact(c.Header), "body": c.Body, "mock_status": c.Status}
		if *logRaw {
			line["raw_body"] = c.Raw
		}
		b, _ := json.Marshal(line)
		mu.Lock()
		defer mu.Unlock()
		_, _ = log.Write(append(b, '\n'))
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "mockllm listening on %s (%s)\n", ln.Addr(), o.api)
	fmt.Fprintln(os.Stderr, http.Serve(ln, ch))
}

// channel is the channel the flags describe: model calls that carry a tool
// result get the reply, calls that offer the tool get its call, the rest
// the reply; with thinking, a call that asks for it gets reasoning first.
func (o options) channel() *mockllm.Channel {
	ch := &mockllm.Channel{API: o.api, FailFirst: o.failFirst, FailFrom: o.failFrom, FailStatus: o.failStatus, Strict: o.strict}
	ch.Pick = func(c mockllm.Call) *mockllm.Turn {
		raw, _ := json.Marshal(c.Body)
		s := string(raw)
		turn := &mockllm.Turn{Text: o.reply}
		if !hasToolResult(s) && o.tool != "" && strings.Contains(s, `"`+o.tool+`"`) {
			tc := mockllm.ToolCall{ID: "call_mock_1", Name: o.tool, Args: o.toolArgs}
			if o.api == mockllm.Responses || (o.api == mockllm.All && strings.HasSuffix(c.Path, "/responses")) {
				if tc.Custom = customTool(c.Body, o.tool); tc.Custom {
					tc.Args = customInput(o.toolArgs)
				}
			}
			turn = &mockllm.Turn{ToolCalls: []mockllm.ToolCall{tc}}
		}
		if o.thinking && asksThinking(c.Body) {
			turn.Reasoning = thinkingText
		}
		return turn
	}
	return ch
}

// thinkingText is the reasoning of a -thinking answer. Every mockllm
// thinks the same words; only the signature tells who minted them.
const thinkingText = "The user wants a short answer; I will give it."

// asksThinking tells whether a model call asks for reasoning: Anthropic
// `thinking` of a type other than "disabled", Chat `reasoning_effort`,
// Responses `reasoning`, Gemini `generationConfig.thinkingConfig`.
func asksThinking(body map[string]any) bool {
	if th, ok := body["thinking"].(map[string]any); ok {
		return th["type"] != "disabled"
	}
	if gc, ok := body["generationConfig"].(map[string]any); ok && gc["thinkingConfig"] != nil {
		return true
	}
	return body["reasoning_effort"] != nil || body["reasoning"] != nil
}

// customTool tells whether a request offers the tool named name as a
// freeform tool (an object of "type": "custom" with that name, anywhere:
// Codex nests its tools in namespaces of an additional_tools input item).
func customTool(v any, name string) bool {
	switch v := v.(type) {
	case map[string]any:
		if v["type"] == "custom" && v["name"] == name {
			return true
		}
		for _, e := range v {
			if customTool(e, name) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if customTool(e, name) {
				return true
			}
		}
	}
	return false
}

// customInput is the input of a freeform tool call given as -tool-args:
// the "input" string of a JSON object, else the text as it is.
func customInput(args string) string {
	var doc struct {
		Input *string `json:"input"`
	}
	if json.Unmarshal([]byte(args), &doc) == nil && doc.Input != nil {
		return *doc.Input
	}
	return args
}

// hasToolResult tells whether a request body carries a tool result in any
// of the four APIs.
func hasToolResult(body string) bool {
	for _, marker := range []string{`"tool_result"`, `"role":"tool"`, `"function_call_output"`, `"custom_tool_call_output"`, `"functionResponse"`} {
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
