package via

import (
	"strings"
	"testing"
)

func TestPseudonym(t *testing.T) {
	p := New("dual-proxy-")
	t.Run("GW-2/entry-names-a-random-pseudonym", func(t *testing.T) {
		if !strings.HasPrefix(p.Name(), "dual-proxy-") || len(p.Name()) != len("dual-proxy-")+16 {
			t.Fatalf("name %q, want dual-proxy- and 16 hex digits", p.Name())
		}
		if p.Entry() != "1.1 "+p.Name() || New("dual-proxy-").Name() == p.Name() {
			t.Fatalf("entry %q of %q, or two instances share a name", p.Entry(), p.Name())
		}
	})
	t.Run("GW-2/own-entry-anywhere-in-the-chain-is-a-loop", func(t *testing.T) {
		for _, vias := range [][]string{
			{p.Entry()},
			{"1.1 a, " + p.Entry() + " (comment)"},
			{"1.0 b", "1.1 a,1.1 " + p.Name()},
		} {
			if !p.Looped(vias) {
				t.Errorf("Looped(%q) = false", vias)
			}
		}
	})
	t.Run("GW-2/other-entries-and-prefixes-are-no-loop", func(t *testing.T) {
		for _, vias := range [][]string{
			nil,
			{"1.1 " + New("dual-proxy-").Name()},
			{"1.1 " + p.Name() + "x"},
			{p.Name()}, // a pseudonym with no protocol is no entry
		} {
			if p.Looped(vias) {
				t.Errorf("Looped(%q) = true", vias)
			}
		}
		if (Pseudonym{}).Looped([]string{"1.1 x"}) {
			t.Error("the zero Pseudonym found a loop")
		}
	})
	t.Run("GW-2/chain-keeps-incoming-entries-ours-last", func(t *testing.T) {
		if got := p.Chain([]string{"1.1 a", "1.1 b"}); got != "1.1 a, 1.1 b, "+p.Entry() {
			t.Fatalf("Chain = %q", got)
		}
		if got := p.Chain(nil); got != p.Entry() {
			t.Fatalf("Chain(nil) = %q", got)
		}
	})
}
