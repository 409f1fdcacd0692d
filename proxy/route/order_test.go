package route

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/proxy/candidate"
)

// testCands is the default order A, B, C, direct (SPEC GW-1).
func testCands(t testing.TB) []candidate.Candidate {
	t.Helper()
	var cs []candidate.Candidate
	for _, a := range []string{"a:1", "b:1", "c:1"} {
		c, err := ParseGateway(a, "gateway")
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	return append(cs, candidate.Direct)
}

func keys(cs []candidate.Candidate) string {
	ks := make([]string, len(cs))
	for i, c := range cs {
		ks[i] = strings.TrimSuffix(c.Key(), ":1")
	}
	return strings.Join(ks, " ")
}

func coolingSet(keys ...string) func(string) bool {
	return func(k string) bool { return slices.Contains(keys, k) }
}

func TestOrder(t *testing.T) {
	cases := []struct {
		name              string
		rule              Rule
		cached, preferred string
		cooling           []string
		want              string
	}{
		{"ORD-1/default-order", RuleNone, "", "", nil, "a b c direct"},
		{"ORD-1/cache", RuleNone, "c:1", "", nil, "c a b direct"},
		{"ORD-1/preference", RuleNone, "", "b:1", nil, "b a c direct"},
		{"ORD-1/cache-beats-preference", RuleNone, "c:1", "b:1", nil, "c b a direct"},
		{"ORD-1/cache-equals-preference", RuleNone, "c:1", "c:1", nil, "c a b direct"},
		{"ORD-1/cached-direct-no-rule", RuleNone, "direct", "b:1", nil, "direct b a c"},
		{"ORD-1/preferred-direct-no-rule", RuleNone, "", "direct", nil, "direct a b c"},
		{"ORD-1/rule-direct-beats-cache", RulePreferDirect, "c:1", "", nil, "direct c a b"},
		{"ORD-1/rule-direct-beats-preference", RulePreferDirect, "", "b:1", nil, "direct b a c"},
		{"ORD-1/rule-direct-cache-preference", RulePreferDirect, "c:1", "b:1", nil, "direct c b a"},
		{"ORD-1/rule-direct-cached-direct", RulePreferDirect, "direct", "b:1", nil, "direct b a c"},
		{"ORD-1/rule-proxy-beats-cached-direct", RulePreferProxy, "direct", "", nil, "a b c direct"},
		{"ORD-1/rule-proxy-beats-preferred-direct", RulePreferProxy, "b:1", "direct", nil, "b a c direct"},
		{"ORD-1/rule-proxy-cache-preference", RulePreferProxy, "c:1", "b:1", nil, "c b a direct"},
		{"ORD-1/unknown-keys-ignored", RuleNone, "zz:1", "yy:1", nil, "a b c direct"},
		{"ORD-2/cooling-gateway-stays-last", RuleNone, "", "", []string{"a:1"}, "b c direct a"},
		{"ORD-2/cold-zone-default-order", RuleNone, "", "", []string{"c:1", "a:1"}, "b direct a c"},
		{"ORD-2/cache-cannot-pull-cooling-forward", RuleNone, "c:1", "", []string{"c:1"}, "a b direct c"},
		{"ORD-2/preference-cannot-pull-cooling-forward", RuleNone, "b:1", "a:1", []string{"a:1"}, "b c direct a"},
		{"ORD-2/rule-direct-cannot-pull-cooling-direct", RulePreferDirect, "", "", []string{"direct"}, "a b c direct"},
		{"ORD-2/rule-proxy-cannot-pull-cooling-gateways", RulePreferProxy, "", "", []string{"a:1", "b:1", "c:1"}, "direct a b c"},
		{"ORD-2/rule-proxy-some-cooling", RulePreferProxy, "", "", []string{"a:1"}, "b c direct a"},
		{"ORD-2/all-cooling-default-order", RulePreferDirect, "c:1", "b:1", []string{"a:1", "b:1", "c:1", "direct"}, "a b c direct"},
		{"ORD-3/unknown-rule-keeps-direct", Rule(9), "", "", nil, "a b c direct"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cands := testCands(t)
			orig := slices.Clone(cands)
			got := Order(cands, c.rule, c.cached, c.preferred, coolingSet(c.cooling...))
			if keys(got) != c.want {
				t.Fatalf("Order = %q, want %q", keys(got), c.want)
			}
			if !slices.Equal(cands, orig) {
				t.Fatal("Order modified its input")
			}
		})
	}
}

func TestOrderBothListsDirectFirst(t *testing.T) {
	r := mustRules(t, []string{"*.example.com"}, []string{"*.example.com"}, "")
	got := Order(testCands(t), r.Match("api.example.com", 443), "c:1", "b:1", nil)
	if keys(got) != "direct c b a" {
		t.Fatalf("ORD-3/both-lists-direct-first: %q", keys(got))
	}
}

func TestOrderEdgeCases(t *testing.T) {
	if got := Order(nil, RulePreferDirect, "direct", "", nil); len(got) != 0 {
		t.Fatalf("empty input: %v", got)
	}
	calls := map[string]int{}
	Order(testCands(t), RuleNone, "", "", func(k string) bool { calls[k]++; return false })
	for k, n := range calls {
		if n != 1 {
			t.Errorf("cooling(%q) called %d times, want 1", k, n)
		}
	}
	if len(calls) != 4 {
		t.Errorf("cooling called for %d keys, want 4", len(calls))
	}
	// More than 64 candidates: the slow path must agree with the rules.
	var many []candidate.Candidate
	for i := range 70 {
		c, err := ParseGateway("h"+strconv.Itoa(i)+":1", "gateway")
		if err != nil {
			t.Fatal(err)
		}
		many = append(many, c)
	}
	many = append(many, candidate.Direct)
	got := Order(many, RulePreferDirect, many[69].Key(), "", coolingSet(many[0].Key()))
	if !got[0].Direct || got[1].Key() != many[69].Key() || got[len(got)-1].Key() != many[0].Key() || len(got) != 71 {
		t.Fatalf("ORD-2/many: got first %v %v last %v len %d", got[0], got[1], got[len(got)-1], len(got))
	}
}

func BenchmarkOrder(b *testing.B) {
	cands := testCands(b)
	cooling := func(k string) bool { return k == "a:1" }
	b.ReportAllocs()
	for b.Loop() {
		_ = Order(cands, RulePreferProxy, "c:1", "b:1", cooling)
	}
}
