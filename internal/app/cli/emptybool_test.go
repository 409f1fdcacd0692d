package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/dual-proxy/dual-proxy/internal/app/settings"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
)

// resolveServe resolves the standalone proxy's settings from args and the
// variables of env as `dual-proxy ARGS` does at start (the flags, their
// variables, the config file's proxy: section). The variables are set in
// the process too: urfave/cli reads a flag's variable from there.
func resolveServe(t *testing.T, env []string, args ...string) *Settings {
	t.Helper()
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	environ := ownRegistry(append([]string{"HOME=" + t.TempDir()}, env...), t.TempDir())
	var s *Settings
	app := &cli.App{
		Name: "dual-proxy", Flags: proxyFlags(modeServe), Writer: io.Discard, ErrWriter: io.Discard,
		Metadata: map[string]any{metaArgs: args},
		Action: func(c *cli.Context) (err error) {
			s, err = resolve(c, modeServe, environ)
			return err
		},
	}
	if err := app.Run(append([]string{"dual-proxy"}, args...)); err != nil {
		t.Fatalf("dual-proxy %s: %v", strings.Join(args, " "), err)
	}
	return s
}

// reloadable is the running instance's live settings of s with its
// config file, reloaded as SIGHUP and the watch do.
type reloadable struct {
	f    *configFile
	live *settings.Live
}

func newReloadable(t *testing.T, s *Settings) *reloadable {
	t.Helper()
	log := (&testkit.LogBuffer{}).Logger()
	f := newConfigFile(s, log)
	defaults := flagDefaults(s.Mode)
	live, err := settings.New(settings.Options{
		Values: s.Live, Sources: s.Sources, Defaults: defaults, File: s.ConfigPath, Logger: log,
		Lock: &f.mu, Written: f.written,
		Apply: func(*settings.Resolved) error { return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	f.live = live
	return &reloadable{f: f, live: live}
}

// reload writes text to the file and reloads it; the key's value and
// source after it.
func (r *reloadable) reload(t *testing.T, text, key string) (bool, settings.Source) {
	t.Helper()
	if err := os.WriteFile(r.f.s.ConfigPath, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := r.f.reload("SIGHUP", false); err != nil {
		t.Fatal(err)
	}
	doc := r.live.Document()
	return r.live.Current().Values.Bool(key), doc.Sources[key]
}

// TestEmptyBoolVariableNotSet: an empty or blank variable of a yes/no
// setting (LOOPBACK_DIRECT= exported empty by a script) is not set, as
// for a number: the key keeps its default, the config file's value or
// the flag's, at start and at every reload of the file, never false
// (docs/flags.md, SPEC OPS-7). Every boolean key of the table.
func TestEmptyBoolVariableNotSet(t *testing.T) {
	const noKey = "proxy:\n  cooldown-ms: 7000\n"
	withKey := func(k settings.Key, b bool) string { return fmt.Sprintf("proxy:\n  %s: %t\n", k.Name, b) }
	n := 0
	for _, k := range settings.Keys {
		if k.Kind != settings.KindBool {
			continue
		}
		n++
		def := k.DefaultFor(false).(bool)
		for _, blank := range []struct{ name, val string }{{"empty", ""}, {"blank", " \t "}} {
			env := []string{k.Env + "=" + blank.val}
			t.Run("OPS-7/"+blank.name+"-variable-is-the-default-then-the-files/"+k.Name, func(t *testing.T) {
				cfg := filepath.Join(t.TempDir(), "config.yaml")
				if err := os.WriteFile(cfg, []byte(noKey), 0o600); err != nil {
					t.Fatal(err)
				}
				s := resolveServe(t, env, "--config", cfg)
				if got, src := s.Live.Bool(k.Name), s.Sources[k.Name]; got != def || src != settings.SourceDefault {
					t.Fatalf("at start %t from %q, want the default %t", got, src, def)
				}
				r := newReloadable(t, s)
				if got, src := r.reload(t, withKey(k, !def), k.Name); got != !def || src != settings.SourceFile {
					t.Fatalf("after a reload setting %t: %t from %q", !def, got, src)
				}
				if got, src := r.reload(t, noKey, k.Name); got != def || src != settings.SourceDefault {
					t.Fatalf("after a reload dropping the key: %t from %q, want the default %t", got, src, def)
				}
			})
			t.Run("OPS-7/"+blank.name+"-variable-leaves-the-files-value/"+k.Name, func(t *testing.T) {
				cfg := filepath.Join(t.TempDir(), "config.yaml")
				if err := os.WriteFile(cfg, []byte(withKey(k, !def)), 0o600); err != nil {
					t.Fatal(err)
				}
				s := resolveServe(t, env, "--config", cfg)
				if got, src := s.Live.Bool(k.Name), s.Sources[k.Name]; got != !def || src != settings.SourceFile {
					t.Fatalf("at start %t from %q, want the file's %t", got, src, !def)
				}
				r := newReloadable(t, s)
				if got, src := r.reload(t, withKey(k, def), k.Name); got != def || src != settings.SourceFile {
					t.Fatalf("after a reload setting %t: %t from %q", def, got, src)
				}
			})
			t.Run("OPS-7/"+blank.name+"-variable-leaves-the-flags-value/"+k.Name, func(t *testing.T) {
				cfg := filepath.Join(t.TempDir(), "config.yaml")
				if err := os.WriteFile(cfg, []byte(withKey(k, def)), 0o600); err != nil {
					t.Fatal(err)
				}
				s := resolveServe(t, env, "--config", cfg, fmt.Sprintf("--%s=%t", k.Name, !def))
				if got, src := s.Live.Bool(k.Name), s.Sources[k.Name]; got != !def || src != settings.SourceFlag {
					t.Fatalf("at start %t from %q, want the flag's %t", got, src, !def)
				}
				r := newReloadable(t, s)
				if got, src := r.reload(t, withKey(k, def)+"  cooldown-ms: 7001\n", k.Name); got != !def || src != settings.SourceFlag {
					t.Fatalf("after a reload of a file setting %t: %t from %q, want the flag's %t", def, got, src, !def)
				}
			})
		}
	}
	if n == 0 {
		t.Fatal("the key table has no boolean key")
	}
}
