package anthropic

import "testing"

// TestToolIDs: an id outside Anthropic's tool id alphabet is rewritten to
// one inside it and back, the same way every time (SPEC POOL-25).
func TestToolIDs(t *testing.T) {
	t.Run("POOL-25/tool-id-mapping-is-reversible-and-stable", func(t *testing.T) {
		for _, id := range []string{"functions.Bash:0", "call 1", "ü", "a/b=c", "dpid_x.y", "dpid_!!"} {
			an := anthropicToolID(id)
			if !anthropicToolIDOK(an) || an == id {
				t.Fatalf("%q → %q: not an Anthropic id", id, an)
			}
			if anthropicToolID(id) != an {
				t.Fatalf("%q mapped twice differently", id)
			}
			if back := originalToolID(an); back != id {
				t.Fatalf("%q → %q → %q", id, an, back)
			}
		}
		for _, id := range []string{"toolu_01Abc", "call_mock_1", "", "dpid_", "dpid_YWJj"} {
			if anthropicToolID(id) != id || originalToolID(id) != id {
				t.Fatalf("%q changed: %q %q", id, anthropicToolID(id), originalToolID(id))
			}
		}
	})
}
