package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/app/settings"
)

// TestSetNotesAStartFlag: `dual-proxy settings set` on a key the running
// instance took from a flag or its environment variable applies the
// change and says in one line that a restart brings that value back
// (docs/flags.md); a key from the default says nothing. The settings
// document tells each key's source at start (start_sources) beside its
// current one (SPEC OPS-7).
func TestSetNotesAStartFlag(t *testing.T) {
	env := liveEnv(t)
	startLauncher(t, append(env, "COOLDOWN_MS=1000"), "--race-delay-ms", "100")
	registeredInstance(t, env)
	const (
		envNote  = "note: cooldown-ms is also set by COOLDOWN_MS at start; a restart brings that value back\n"
		flagNote = "note: race-delay-ms is also set by --race-delay-ms at start; a restart brings that value back\n"
	)
	t.Run("OPS-7/set-on-a-flag-or-variable-key-notes-the-restart", func(t *testing.T) {
		out, errOut, st := runCmdEnv(t, DualProxy, env, "settings", "set", "cooldown-ms=1500", "race-delay-ms=200", "pref-ttl-ms=5000")
		if st != 0 || !strings.Contains(out, "cooldown-ms = 1500 (api)\n") || !strings.Contains(out, envNote) || !strings.Contains(out, flagNote) {
			t.Fatalf("settings set: %d %q %q", st, out, errOut)
		}
		if strings.Contains(out, "note: pref-ttl-ms") || strings.Count(out, "note: ") != 2 {
			t.Fatalf("a key from the default got a note: %q", out)
		}
	})
	t.Run("OPS-7/second-set-still-notes-the-restart", func(t *testing.T) {
		out, errOut, st := runCmdEnv(t, DualProxy, env, "settings", "set", "cooldown-ms=1600")
		if st != 0 || !strings.Contains(out, envNote) {
			t.Fatalf("settings set: %d %q %q", st, out, errOut)
		}
	})
	t.Run("OPS-7/document-tells-the-source-at-start", func(t *testing.T) {
		out, errOut, st := runCmdEnv(t, DualProxy, env, "settings", "get", "--json")
		var doc settings.Document
		if st != 0 || json.Unmarshal([]byte(out), &doc) != nil {
			t.Fatalf("settings get --json: %d %q %q", st, out, errOut)
		}
		if doc.Sources[settings.CooldownMS] != settings.SourceAPI || doc.StartSources[settings.CooldownMS] != settings.SourceEnv ||
			doc.StartSources[settings.RaceDelayMS] != settings.SourceFlag || doc.StartSources[settings.PrefTTLMS] != settings.SourceDefault {
			t.Fatalf("sources %v, at start %v", doc.Sources, doc.StartSources)
		}
	})
}

// TestSetNotesTheFlagGiven: the note of what a restart brings back names
// the flag given at start, --no-verify-tls rather than --verify-tls
// (SPEC OPS-7, docs/flags.md).
func TestSetNotesTheFlagGiven(t *testing.T) {
	env := liveEnv(t)
	startLauncher(t, env, "--no-verify-tls")
	registeredInstance(t, env)
	t.Run("OPS-7/set-notes-no-verify-tls-as-given", func(t *testing.T) {
		out, errOut, st := runCmdEnv(t, DualProxy, env, "settings", "set", "verify-tls=true")
		if st != 0 || !strings.Contains(out, "note: verify-tls is also set by --no-verify-tls at start; a restart brings that value back\n") {
			t.Fatalf("settings set: %d %q %q", st, out, errOut)
		}
	})
}
