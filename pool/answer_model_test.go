package pool

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/testbed/mockllm"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// TestAnswerModel: an answer names the unified model id the client asked
// for, translated or not, streamed or not; the member and its own model id
// go in the response headers x-pool-member and x-pool-member-model (SPEC
// POOL-2, POOL-13b). A same-API answer is otherwise passed through byte for
// byte (POOL-21): the mock echoes the target id it was sent, which the
// client never sees.
func TestAnswerModel(t *testing.T) {
	for _, api := range config.ChannelAPIs {
		for _, client := range clientAPIs {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("POOL-2/%s-client-on-%s-member/stream=%v", client, api, stream), func(t *testing.T) {
					w := newMixWorld(t, []mixMember{{name: "a", api: api, speaks: memberSpeaks(api, client),
						turns: []mockllm.Turn{{Text: "hi", OutputTokens: 1}}}}, "    models: [{id: m, targets: {a: m-upstream}}]\n")
					resp, body := w.do(clientRequest(client, stream, "say hi"))
					if resp.StatusCode != 200 {
						t.Fatalf("status %d: %s", resp.StatusCode, body)
					}
					if got := answerOf(t, client, stream, body).Model; got != "m" {
						t.Fatalf("answer names model %q, want the unified %q\n%s", got, "m", body)
					}
					if strings.Contains(string(body), "m-upstream") {
						t.Fatalf("the member's model id reached the client's answer:\n%s", body)
					}
					if m, mm := resp.Header.Get("X-Pool-Member"), resp.Header.Get("X-Pool-Member-Model"); m != "a" || mm != "m-upstream" {
						t.Fatalf("x-pool-member %q, x-pool-member-model %q; want a, m-upstream", m, mm)
					}
				})
			}
		}
	}
}
