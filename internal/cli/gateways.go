package cli

import (
	"strings"

	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/dial"
)

// checkGatewayCAs loads the CA file of every https gateway that names one
// (URL query ca=, SPEC GW-6), so a missing or empty file is a startup error
// (exit 2) naming where the gateway came from.
func checkGatewayCAs(cands []candidate.Candidate) error {
	for _, c := range cands {
		if c.CAFile == "" {
			continue
		}
		if _, err := dial.LoadCAFile(c.CAFile); err != nil {
			flag := fGateway
			switch {
			case c.Source == "upstream-url":
				flag = fUpstreamURL
			case strings.HasPrefix(c.Source, "env:"):
				return usageError(fGateway, "%s (from %s): %v", c.String(), strings.TrimPrefix(c.Source, "env:"), err)
			}
			return usageError(flag, "%s: %v", c.String(), err)
		}
	}
	return nil
}
