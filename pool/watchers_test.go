package pool

import (
	"testing"
)

func TestUpstreamURL(t *testing.T) {
	for _, tc := range []struct{ base, path, want string }{
		{"https://api.anthropic.com", "/v1/messages", "https://api.anthropic.com/v1/messages"},
		{"https://api.openai.com/v1", "/v1/responses", "https://api.openai.com/v1/responses"},
		{"https://open.example.cn/api/paas/v4/", "/v1/chat/completions", "https://open.example.cn/api/paas/v4/chat/completions"},
		{"http://127.0.0.1:8080/anthropic", "/v1/messages", "http://127.0.0.1:8080/anthropic/v1/messages"},
		{"http://127.0.0.1:8080/vx", "/v1/messages", "http://127.0.0.1:8080/vx/v1/messages"},
	} {
		t.Run("POOL-1/"+tc.base, func(t *testing.T) {
			if got := memberURL(tc.base, tc.path); got != tc.want {
				t.Fatalf("got %s", got)
			}
		})
	}
}
