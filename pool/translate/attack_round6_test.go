package translate

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestAttackRound6Held: a held string whose place the encoder drops (an
// assistant turn with only reasoning text translated to Chat is left out)
// leaves its mark unused; a client's own JSON that spells that mark must
// not receive the held string (SPEC POOL-21: the client's text unchanged,
// Marshal's bytes).
func TestAttackRound6Held(t *testing.T) {
	t.Run("POOL-21/dropped-held-string-not-spliced-into-a-forged-mark", func(t *testing.T) {
		long := strings.Repeat("secret reasoning ", 40)
		r := &Request{Model: "m", Messages: []Message{
			{Role: RoleUser, Parts: []Part{{Kind: KindText, Text: "hi"}}},
			{Role: RoleAssistant, Parts: []Part{{Kind: KindReasoning, Text: long}}},
			{Role: RoleUser, Parts: []Part{{Kind: KindText, Text: "again"}}},
		}, Tools: []Tool{{Name: "t", Schema: json.RawMessage(`{"type":"object","description":"\u0000dual-proxy-held-0\u0000"}`)}}}
		v, err := chatRequestOut(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(v)
		got, err := EncodeRequest(APIChat, r)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("EncodeRequest (%v)\n%s\njson.Marshal\n%s", err, got, want)
		}
	})
}
