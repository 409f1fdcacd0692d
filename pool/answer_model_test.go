package pool

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/mockllm"
	"github.com/dual-proxy/dual-proxy/pool/config"
	"github.com/dual-proxy/dual-proxy/pool/translate"
)

// modelOf is the model an answer of api names: a complete answer's, or the
// one a stream names at its start.
func modelOf(t *testing.T, api translate.API, stream bool, body []byte) string {
	t.Helper()
	if !stream {
		r, err := translate.DecodeResponse(api, body)
		if err != nil {
			t.Fatalf("client answer: %v\n%s", err, body)
		}
		return r.Model
	}
	dec := translate.NewStreamDecoder(api)
	for _, block := range strings.Split(string(body), "\n\n") {
		name, data := "", ""
		for _, line := range strings.Split(block, "\n") {
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				name = v
			} else if v, ok := strings.CutPrefix(line, "data: "); ok {
				data = v
			}
		}
		if data == "" {
			continue
		}
		evs, err := dec.Decode(name, []byte(data))
		if err != nil {
			t.Fatalf("client stream: %v\n%s", err, body)
		}
		for _, e := range evs {
			if e.Kind == translate.EvStart {
				return e.Model
			}
		}
	}
	t.Fatalf("no start event in\n%s", body)
	return ""
}

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
					if got := modelOf(t, client, stream, body); got != "m-upstream" {
						t.Fatalf("answer names model %q, want the member's %q\n%s", got, "m-upstream", body)
					}
				})
			}
		}
	}
}
