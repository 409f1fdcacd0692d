package responses

import (
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/api/internal/wiretest"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
)

// TestResponsesDeltaMatchesMarshal: the hand-written Responses text delta
// is the event delta writes (json.Marshal of its map), byte for byte, and
// keeps the item's text and the sequence numbers alike (SPEC POOL-21).
func TestResponsesDeltaMatchesMarshal(t *testing.T) {
	for _, s := range wiretest.StringSeeds[1:] {
		t.Run("POOL-21/responses-text-delta", func(t *testing.T) {
			mk := func() *responsesStreamEncoder {
				e := newResponsesStreamEncoder("m", nil)
				e.Kind, e.ItemIndex, e.Seq, e.Item.ID = neutral.KindText, 2, 7, `msg_<&>"1`
				return e
			}
			fast, slow := mk(), mk()
			ev := neutral.Event{Kind: neutral.EvDelta, Index: 2, Part: neutral.Part{Kind: neutral.KindText, Text: s}}
			got, ok := fast.AppendDelta([]byte("prev"), ev)
			want := slow.Delta(ev.Part)
			if !ok || string(got) != "prev"+string(want) || fast.Seq != slow.Seq || fast.Text.String() != slow.Text.String() {
				t.Errorf("%q:\n got %s (ok %v)\nwant prev%s", s, got, ok, want)
			}
		})
	}
}
