package agentlab

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Tools are the lab's servers as programs, built by BuildTools: processes
// of their own, so they can run inside the namespace where the test
// process cannot listen.
type Tools struct {
	// MockLLM is internal/testbed/mockllm/cmd/mockllm, the mock model endpoint.
	MockLLM string
	// Gateway is internal/testbed/testworld/cmd/gateway, the logging gateway.
	Gateway string
}

// BuildTools builds the mock model endpoint and the logging gateway into
// a temporary directory (one go build, at most 5 minutes; an error fails t).
func BuildTools(t testing.TB) Tools {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "build", "-o", dir+string(filepath.Separator),
		"github.com/dual-proxy/dual-proxy/internal/testbed/mockllm/cmd/mockllm", "github.com/dual-proxy/dual-proxy/internal/testbed/testworld/cmd/gateway").CombinedOutput()
	if err != nil {
		t.Fatalf("go build the lab's servers: %v\n%s", err, out)
	}
	return Tools{MockLLM: filepath.Join(dir, "mockllm"), Gateway: filepath.Join(dir, "gateway")}
}

// StartMockLLM starts the mock model endpoint bin inside l on
// 127.0.0.1:port with more flags args (-api, -reply, -fail-first…; -api
// defaults to anthropic) and returns its request log (JSON lines).
func (l *Lab) StartMockLLM(t testing.TB, bin, port string, args ...string) string {
	t.Helper()
	log := filepath.Join(t.TempDir(), "mockllm-"+port+".jsonl")
	l.StartServer(t, "mockllm listening", append([]string{bin, "-addr", "127.0.0.1:" + port, "-log", log}, args...)...)
	return log
}

// StartGateway starts the logging gateway bin inside l on 127.0.0.1:port,
// dialling each route ("host:port=IP:port") for its target, and returns
// its log of request heads (JSON lines: kind, method, target, user_agent).
func (l *Lab) StartGateway(t testing.TB, bin, port string, routes ...string) string {
	t.Helper()
	log := filepath.Join(t.TempDir(), "gateway-"+port+".jsonl")
	argv := []string{bin, "-addr", "127.0.0.1:" + port, "-log", log}
	for _, r := range routes {
		argv = append(argv, "-route", r)
	}
	l.StartServer(t, "gateway listening", argv...)
	return log
}
