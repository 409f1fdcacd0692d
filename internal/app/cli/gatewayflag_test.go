package cli

import (
	"slices"
	"testing"
)

// TestGatewayFlagKeepsACommaInThePassword pins that --gateway, which the
// flag package splits on commas, keeps a comma of a password inside its
// gateway, while `--gateway a --gateway b` and a comma list still give
// each gateway (SPEC GW-3, GW-4).
func TestGatewayFlagKeepsACommaInThePassword(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []string
		want []string
	}{
		{"GW-4/comma-in-password", []string{"http://alice:hunter", "two@127.0.0.1:18511"}, []string{"http://alice:hunter,two@127.0.0.1:18511"}},
		{"GW-3/repeated-flag", []string{"h1:1", "http://h2:2"}, []string{"h1:1", "http://h2:2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := flagList(fGateway, tc.in); !slices.Equal(got, tc.want) {
				t.Fatalf("flagList(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
