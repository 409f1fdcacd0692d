package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/dual-proxy/dual-proxy/internal/app/settings"
	"github.com/dual-proxy/dual-proxy/proxy"
	"github.com/dual-proxy/dual-proxy/proxy/statusdoc"
)

// zeroFrom are the zero value of k ("0" or "") as every source reads it:
// the flag and its environment variable and `settings set` (text), the
// API (JSON), the config file's proxy: section (YAML; live keys only).
func zeroFrom(t *testing.T, k settings.Key) map[string]any {
	t.Helper()
	text, js, yml := "", `""`, "''"
	if k.Kind == settings.KindMS || k.Kind == settings.KindCount {
		text, js, yml = "0", "0", "0"
	}
	out := map[string]any{}
	if x, err := settings.ParseText(k, text); err == nil {
		out["flag, env, settings set"] = x
	} else {
		t.Fatalf("%s: the text %q does not read: %v", k.Name, text, err)
	}
	if x, err := settings.ParseJSON(k, json.RawMessage(js)); err == nil {
		out["API"] = x
	} else {
		t.Fatalf("%s: the JSON %s does not read: %v", k.Name, js, err)
	}
	if k.Live {
		sec, err := settings.ReadSection([]byte("proxy:\n  "+k.Name+": "+yml+"\n"), "f.yaml")
		if err != nil {
			t.Fatalf("%s: the file's %s does not read: %v", k.Name, yml, err)
		}
		out["file"] = sec.Values[k.Name]
	}
	return out
}

// TestKeyTableWalk walks internal/app/settings' key table: every key is a
// flag with its environment variable, default and usage from the table;
// a field of the settings document (live) or of its fixed part, described
// for the form with its heading, its hint and what 0 or the empty string
// means (the form keeps no list of its own); a proxy: key of the
// file (live keys; the others are refused by name); a --print-config
// row; a row of docs/flags.md; a field of the status document's settings;
// a part of the proxy.Config that runs it, where 0 means what it means
// for the key (proxyConfigFollows); and its 0 or empty string reads as
// the same value from every source and is accepted exactly when the table
// gives it a meaning (SPEC OPS-7: one description of every setting).
func TestKeyTableWalk(t *testing.T) {
	flagsDoc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "flags.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, zeroDoc, _ := strings.Cut(string(flagsDoc), "## What 0 and '' mean")
	out, errOut, status := runCmd(t, DualProxy, nil, "--health-url", "", "--print-config")
	if status != 0 {
		t.Fatalf("--print-config: %d %s", status, errOut)
	}
	doc := settingsDocument(t)
	base := flagDefaults(modeServe)
	base[settings.HealthURL] = "" // no health check runs in the engine below
	st := engineStatus(t, base)
	for _, k := range settings.Keys {
		t.Run("OPS-7/"+k.Name, func(t *testing.T) {
			if k.Env == "" || k.Help == "" || k.Group == "" || (k.Default == nil) != k.Optional {
				t.Fatalf("the table's row is incomplete: %+v", k)
			}
			for _, m := range []mode{modeServe, modeRun, modeClaude} {
				f := findFlag(proxyFlags(m), k.Name)
				if f == nil {
					t.Fatalf("mode %d: no flag --%s", m, k.Name)
				}
				f = unwrapFlag(f)
				ev := f.(interface{ GetEnvVars() []string }).GetEnvVars()
				if !slices.Equal(ev, []string{k.Env}) || !strings.Contains(f.(cli.DocGenerationFlag).GetUsage(), k.Usage()) {
					t.Fatalf("mode %d: --%s env %v usage %q; the table says %s, %q", m, k.Name, ev, f.(cli.DocGenerationFlag).GetUsage(), k.Env, k.Usage())
				}
				want := k.DefaultFor(m != modeServe)
				if k.Name == settings.HealthURL && m == modeClaude {
					want = defaultClaudeBase
				}
				if got := flagDefaults(m)[k.Name]; settings.Text(got) != settings.Text(want) || (got == nil) != (want == nil) {
					t.Fatalf("mode %d: --%s default %#v, the table's %#v", m, k.Name, got, want)
				}
			}
			if k.Zero != "" && !strings.Contains(k.Usage(), k.ZeroValue()+" = "+k.Zero) {
				t.Fatalf("usage %q does not say what %s means", k.Usage(), k.ZeroValue())
			}
			if !tableRow(string(flagsDoc), "`--"+k.Name+"`", "`"+k.Env+"`") {
				t.Fatalf("docs/flags.md has no row `--%s` | `%s`", k.Name, k.Env)
			}
			if (k.Zero != "") != firstCell(zeroDoc, "`--"+k.Name+"`") {
				t.Fatalf("docs/flags.md's \"What 0 and '' mean\" and the table disagree on --%s (zero %q)", k.Name, k.Zero)
			}
			if !strings.Contains(out, "\n"+k.Name+":") && !strings.HasPrefix(out, k.Name+":") {
				t.Fatalf("--print-config has no %s row:\n%s", k.Name, out)
			}
			if k.Live {
				if _, ok := doc.Settings[k.Name]; !ok {
					t.Fatalf("the document has no setting %s", k.Name)
				}
				i := slices.IndexFunc(doc.Keys, func(ki settings.KeyInfo) bool { return ki.Name == k.Name })
				if i < 0 || doc.Keys[i].Zero != k.Zero || doc.Keys[i].Optional != k.Optional || doc.Keys[i].Hint != k.Hint || doc.Keys[i].Group != k.Group {
					t.Fatalf("the document describes %s for the form as %+v", k.Name, doc.Keys)
				}
				// The form places the key under a heading the document
				// names (form.js reads its groups and hints there).
				if !slices.ContainsFunc(doc.Groups, func(g settings.Group) bool { return g.Name == k.Group && g.Title != "" }) {
					t.Fatalf("the form has no heading %q for %s: %v", k.Group, k.Name, doc.Groups)
				}
			} else {
				if _, ok := doc.Fixed[k.Name]; !ok {
					t.Fatalf("the document's fixed part has no %s", k.Name)
				}
				_, err := settings.ReadSection([]byte("proxy:\n  "+k.Name+": 1\n"), "f.yaml")
				if err == nil || !strings.Contains(err.Error(), "not a live setting") {
					t.Fatalf("a fixed key in the file: %v", err)
				}
			}
			if _, ok := st.Settings[k.Name]; !ok {
				t.Fatalf("the status document's settings have no %s: %v", k.Name, st.Settings)
			} else if got, want := settings.Text(st.Settings[k.Name]), settings.Text(settings.Mask(k.Name, base[k.Name])); got != want {
				t.Fatalf("the status document shows %s = %q, the values %q", k.Name, got, want)
			}
			proxyConfigFollows(t, k, base)
			if k.Kind == settings.KindBool {
				return // true or false: no 0 or '' to mean something
			}
			var first any
			for src, x := range zeroFrom(t, k) {
				if first == nil {
					first = x
				}
				if settings.Text(x) != settings.Text(first) {
					t.Fatalf("%s from %s reads as %#v, elsewhere %#v", k.ZeroValue(), src, x, first)
				}
				v := flagDefaults(modeServe)
				v[k.Name] = x
				_, fes := settings.Check(v, settings.Env{})
				if (fes == nil) != (k.Zero != "") {
					t.Fatalf("%s = %s from %s: errors %v, the table says %q", k.Name, k.ZeroValue(), src, fes, k.Zero)
				}
			}
		})
	}
}

// settingsDocument is the settings document of a Live built from the
// standalone proxy's defaults.
func settingsDocument(t *testing.T) settings.Document {
	t.Helper()
	l, err := settings.New(settings.Options{Values: flagDefaults(modeServe), Defaults: flagDefaults(modeServe)})
	if err != nil {
		t.Fatal(err)
	}
	return l.Document()
}

// tableRow reports whether a line of a Markdown table in doc holds every
// one of parts.
func tableRow(doc string, parts ...string) bool {
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(line, "|") {
			continue
		}
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}

// firstCell reports whether the first cell of a Markdown table's line in
// doc holds name.
func firstCell(doc, name string) bool {
	for _, line := range strings.Split(doc, "\n") {
		if cells := strings.Split(line, "|"); strings.HasPrefix(line, "|") && len(cells) > 2 && strings.Contains(cells[1], name) {
			return true
		}
	}
	return false
}

// engineStatus is the status document of an engine built from the values
// v as a running instance builds it (settings.Resolved.ProxyConfig).
func engineStatus(t *testing.T, v settings.Values) statusdoc.Status {
	t.Helper()
	cfg := proxyConfigOf(t, v)
	e, err := proxy.NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	st := e.Status()
	// Read back as `dual-proxy status` and the page read it.
	data, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var back statusdoc.Status
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	return back
}

// proxyConfigOf is the proxy.Config of the values v, checked, without its
// Settings (what the status document shows).
func proxyConfigOf(t *testing.T, v settings.Values) proxy.Config {
	t.Helper()
	r, fes := settings.Check(v, settings.Env{})
	if fes != nil {
		t.Fatalf("values refused: %v", fes)
	}
	cfg, _, err := r.ProxyConfig(0)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// resolvedKeys are the keys whose Key.Proxy is nil: the proxy takes them
// resolved (candidates, rules, the health URL), or they set the loggers
// or the listener, never proxy.Config.
var resolvedKeys = map[string]string{
	settings.UpstreamURL: "candidates", settings.UpstreamHost: "candidates", settings.UpstreamPort: "candidates",
	settings.Gateway: "candidates", settings.PreferDirect: "rules", settings.PreferProxy: "rules",
	settings.HealthURL: "health URL", settings.LogLevel: "loggers", settings.LogFormat: "loggers",
	settings.ListenHost: "listener", settings.ListenPort: "listener", settings.PortFallback: "listener",
}

// otherValue is a valid value of k other than its value in base.
func otherValue(k settings.Key, base settings.Values) any {
	switch k.Kind {
	case settings.KindMS, settings.KindCount:
		if base.Int(k.Name) != k.Min+1 {
			return k.Min + 1
		}
		return k.Min + 2
	case settings.KindBool:
		return !base.Bool(k.Name)
	case settings.KindList:
		if k.Name == settings.Gateway {
			return []string{"127.0.0.1:3128"}
		}
		return []string{"x.example"}
	}
	return map[string]any{
		settings.HealthURL: "http://127.0.0.1:9/", settings.UpstreamHost: "", settings.UpstreamURL: "",
		settings.LogLevel: "debug", settings.LogFormat: "json", settings.ListenHost: "127.0.0.2",
	}[k.Name]
}

// proxyConfigFollows proves that k reaches the proxy.Config that runs it:
// a live key other than log-level changes it, a fixed key does not; a key
// with a Key.Proxy sets fields of its own (those that change between two
// of its values), and where the key's 0 means "off", "never" or "no
// cache", those fields hold no positive value once the proxy's defaults
// are filled (proxy.Config.Defaulted): 0 never becomes the proxy's
// default there (SPEC OPS-7: the same meaning of 0 from every source).
func proxyConfigFollows(t *testing.T, k settings.Key, base settings.Values) {
	t.Helper()
	with := func(x any) proxy.Config {
		v := base.Clone()
		v[k.Name] = x
		cfg := proxyConfigOf(t, v)
		cfg.Settings = nil
		return cfg
	}
	before, after := with(base[k.Name]), with(otherValue(k, base))
	changed := !reflect.DeepEqual(before, after)
	switch {
	case k.Proxy == nil && resolvedKeys[k.Name] == "":
		t.Fatalf("%s has no Key.Proxy and is not taken in a resolved form", k.Name)
	case k.Proxy != nil && resolvedKeys[k.Name] != "":
		t.Fatalf("%s has a Key.Proxy and is listed as taken resolved (%s)", k.Name, resolvedKeys[k.Name])
	case k.Live && k.Name != settings.LogLevel && !changed:
		t.Fatalf("a change of %s does not reach proxy.Config", k.Name)
	case !k.Live && changed:
		t.Fatalf("%s is fixed but changes proxy.Config", k.Name)
	}
	if k.Proxy == nil || k.Kind != settings.KindMS {
		return
	}
	// The fields k sets: those that differ between two values of its own.
	one, two := with(k.Min+1), with(k.Min+2)
	rv1, rv2 := reflect.ValueOf(one), reflect.ValueOf(two)
	var fields []string
	for i := range rv1.NumField() {
		if !reflect.DeepEqual(rv1.Field(i).Interface(), rv2.Field(i).Interface()) {
			fields = append(fields, rv1.Type().Field(i).Name)
		}
	}
	if len(fields) == 0 {
		t.Fatalf("%s sets no field of proxy.Config", k.Name)
	}
	if k.Zero == "" {
		return
	}
	zero, err := with(0).Defaulted()
	if err != nil {
		t.Fatalf("%s = 0: %v", k.Name, err)
	}
	for _, f := range fields {
		if d := reflect.ValueOf(zero).FieldByName(f).Int(); d > 0 {
			t.Fatalf("%s = 0 (%s) runs as proxy.Config.%s = %v: the proxy's default, not %q", k.Name, k.Zero, f, d, k.Zero)
		}
	}
}

// TestEveryFlagDocumented walks every flag of the commands that run a
// proxy: each has a row in docs/flags.md's all-flags table, and no usage
// text has a backquote, which urfave/cli would show as the flag's value
// placeholder (SPEC OPS-7: one description of every setting).
func TestEveryFlagDocumented(t *testing.T) {
	flagsDoc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "flags.md"))
	if err != nil {
		t.Fatal(err)
	}
	table, _, _ := strings.Cut(string(flagsDoc), "## The config file is reloaded")
	_, table, _ = strings.Cut(table, "## All flags")
	for _, m := range []mode{modeServe, modeRun, modeClaude} {
		for _, f := range proxyFlags(m) {
			name := f.Names()[0]
			t.Run("OPS-7/flag-documented/"+name, func(t *testing.T) {
				if !strings.Contains(table, "| `--"+name+"`") && !strings.Contains(table, ", `--"+name+"`") {
					t.Fatalf("docs/flags.md's all-flags table has no row for --%s", name)
				}
				if u, ok := unwrapFlag(f).(interface{ GetUsage() string }); ok && strings.Contains(u.GetUsage(), "`") {
					t.Fatalf("--%s's usage has a backquote: help would show it as the value placeholder", name)
				}
			})
		}
	}
}
