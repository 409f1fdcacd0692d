package pool

import (
	"fmt"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/mockllm"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// TestAnswerModel: an answer names the model the member answered with,
// translated or not. A same-API answer is passed through byte for byte
// (SPEC POOL-21), so it carries the member's model (here the mock echoes
// the target id it was sent, POOL-2); a translated answer now says the same
// instead of the unified id the client asked for.
func TestAnswerModel(t *testing.T) {
	for _, api := range config.ChannelAPIs {
		for _, client := range clientAPIs {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("POOL-21/%s-client-on-%s-member/stream=%v", client, api, stream), func(t *testing.T) {
					w := newMixWorld(t, []mixMember{{name: "a", api: api, speaks: memberSpeaks(api, client),
						turns: []mockllm.Turn{{Text: "hi", OutputTokens: 1}}}}, "    models: [{id: m, targets: {a: m-upstream}}]\n")
					resp, body := w.do(clientRequest(client, stream, "say hi"))
					if resp.StatusCode != 200 {
						t.Fatalf("status %d: %s", resp.StatusCode, body)
					}
					if got := answerOf(t, client, stream, body).Model; got != "m-upstream" {
						t.Fatalf("answer names model %q, want the member's %q\n%s", got, "m-upstream", body)
					}
				})
			}
		}
	}
}
