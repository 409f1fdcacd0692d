package editor_test

import (
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/testbed/mockllm"
	"github.com/dual-proxy/dual-proxy/pool"
	"github.com/dual-proxy/dual-proxy/pool/editor"
)

// deadURL is a loopback URL nobody listens on.
func deadURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

func TestGatherModels(t *testing.T) {
	a, _ := channelServer(t, mockllm.Anthropic, `{"data":[{"type":"model","id":"deepseek-flash-20250101","max_input_tokens":200000,"max_tokens":32000},{"type":"model","id":"only-a"}]}`)
	b, _ := channelServer(t, mockllm.Chat, `{"object":"list","data":[{"id":"deepseek/deepseek-flash","object":"model","context_length":131072,"architecture":{"input_modalities":["text","image"]}}]}`)
	yaml := fmt.Sprintf("channels:\n  a: {api: anthropic, base_url: %q, api_key: %s}\n  b: {api: openai-chat, base_url: %q, api_key_env: ENV_KEY}\npools:\n  p: {members: [a, b]}\n", a.URL, secretKey, b.URL+"/v1")
	w := newWorld(t, yaml, 0o600)

	t.Run("POOL-12/gather-proposes-unified-models-with-targets-and-conflicts", func(t *testing.T) {
		w.t = t // failures belong to the subtest
		before := w.tr.n.Load()
		st, _, out := w.do("POST", "/pool/config/models?members=a,b", "", nil)
		if st != 200 {
			t.Fatalf("gather: %d %s", st, out)
		}
		if n := w.tr.n.Load() - before; n != 2 {
			t.Fatalf("OPS-4: %d model-list calls went through the pool's Transport, want 2", n)
		}
		var res struct {
			Members []editor.MemberModels
			Models  []editor.Proposal
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatal(err)
		}
		if len(res.Members) != 2 || !res.Members[0].OK || !res.Members[1].OK {
			t.Fatalf("members: %+v", res.Members)
		}
		p := res.Models[0]
		if p.Targets["a"] != "deepseek-flash-20250101" || p.Targets["b"] != "deepseek/deepseek-flash" || len(p.Missing) != 0 {
			t.Fatalf("proposal %+v", p)
		}
		if p.Merged.ContextWindow != 131072 || p.Merged.MaxTokens != 32000 || strings.Join(p.Merged.Input, ",") != "text,image" {
			t.Fatalf("merged %+v", p.Merged)
		}
		c := strings.Join(p.Conflicts, "\n")
		if !strings.Contains(c, "context_window: a 200000, b 131072 → 131072 (smallest)") || !strings.Contains(c, "input: a unknown, b text|image") {
			t.Fatalf("conflicts:\n%s", c)
		}
		if res.Models[1].ID != "only-a" || strings.Join(res.Models[1].Missing, ",") != "b" {
			t.Fatalf("second proposal %+v", res.Models[1])
		}
	})

	t.Run("POOL-22/gather-error-at-base-url-of-the-edited-channel", func(t *testing.T) {
		w.t = t // failures belong to the subtest
		doc := fmt.Sprintf(`{"channels": {"a": {"api": "anthropic", "base_url": %q, "api_key": "***"}, "n": {"api": "anthropic", "base_url": %q, "api_key": "typed-key-1234"}}, "pools": {"p": {"members": ["a"]}}}`, a.URL, deadURL(t))
		st, _, out := w.do("POST", "/pool/config/models?members=a,n", doc, nil)
		if st != 200 {
			t.Fatalf("gather: %d %s", st, out)
		}
		var res struct{ Members []editor.MemberModels }
		_ = json.Unmarshal([]byte(out), &res)
		if !res.Members[0].OK || res.Members[1].OK || res.Members[1].Path != "channels.n.base_url" {
			t.Fatalf("members %+v", res.Members)
		}
		if strings.Contains(out, "typed-key-1234") {
			t.Fatal("POOL-15: a typed key came back")
		}
	})
}

func TestMemberTest(t *testing.T) {
	a, ma := channelServer(t, mockllm.Anthropic, `{"data":[]}`)
	b, mb := channelServer(t, mockllm.Anthropic, `{"data":[]}`)
	yaml := fmt.Sprintf("channels:\n  a: {api: anthropic, base_url: %q, api_key: %s}\n  b: {api: anthropic, base_url: %q, api_key_env: ENV_KEY}\npools:\n  p: {strategy: failover, members: [a, b]}\n", a.URL, secretKey, b.URL)
	w := newWorld(t, yaml, 0o600)
	t.Run("POOL-14/test-one-member-only", func(t *testing.T) {
		w.t = t // failures belong to the subtest
		st, _, out := w.do("POST", "/pool/p/test?model=m&member=b", "", nil)
		var res pool.TestResult
		_ = json.Unmarshal([]byte(out), &res)
		if st != 200 || res.Result != "ok" || res.Member != "b" || res.Attempts != 1 {
			t.Fatalf("member test: %d %s", st, out)
		}
		if len(ma.Calls()) != 0 || len(mb.Calls()) != 1 || mb.Calls()[0].Body["stream"] != true {
			t.Fatalf("calls: a %d, b %d", len(ma.Calls()), len(mb.Calls()))
		}
	})
	t.Run("POOL-14/member-test-never-fails-over", func(t *testing.T) {
		w.t = t // failures belong to the subtest
		mb.FailFirst, mb.FailStatus = 1, 500
		st, _, out := w.do("POST", "/pool/p/test?model=m&member=b", "", nil)
		var res pool.TestResult
		_ = json.Unmarshal([]byte(out), &res)
		if st != 200 || res.Result != "failed" || len(ma.Calls()) != 0 {
			t.Fatalf("failing member test: %d %s (a got %d calls)", st, out, len(ma.Calls()))
		}
		st, _, out = w.do("POST", "/pool/p/test?model=m&member=ghost", "", nil)
		if st != 200 || !strings.Contains(out, "ghost: not a member of this pool") {
			t.Fatalf("non-member: %d %s", st, out)
		}
	})
}
