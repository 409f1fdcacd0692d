package cli

import (
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

// TestCodexPresetValuesAreTOMLStrings: every value the Codex preset writes
// into a -c override (Codex parses it as TOML) is one escaped TOML string,
// so a pool name cannot end the string and add keys (SPEC POOL-20, POOL-3).
func TestCodexPresetValuesAreTOMLStrings(t *testing.T) {
	t.Run("POOL-20/codex-overrides-escape-the-pool-name", func(t *testing.T) {
		for _, name := range []string{"p", `x"y`, `a\b`, "x\" \nmodel=\"evil", "tab\tesc\x1b"} {
			s := &Settings{PoolName: name, AgentPresets: true}
			_, argv, cleanup, _ := poolChild(s, "tok", 7896, []string{"HOME=/h"}, []string{"codex", "exec"})
			cleanup()
			values := map[string]string{}
			for i := 1; i+1 < len(argv); i++ {
				if argv[i] != "-c" {
					continue
				}
				k, v, _ := strings.Cut(argv[i+1], "=")
				var doc map[string]any
				if err := toml.Unmarshal([]byte("v = "+v), &doc); err != nil || len(doc) != 1 {
					t.Fatalf("pool %q: -c %s is not one TOML value: %v %v", name, argv[i+1], doc, err)
				}
				values[k], _ = doc["v"].(string)
			}
			if got := values["model_providers.dual-pool.name"]; got != "dual-proxy pool "+name {
				t.Errorf("pool %q: provider name reads back as %q", name, got)
			}
			if got := values["model_provider"]; got != "dual-pool" {
				t.Errorf("pool %q: model_provider %q", name, got)
			}
		}
	})
}
