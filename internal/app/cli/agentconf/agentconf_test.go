package agentconf

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/dual-proxy/dual-proxy/envrewrite"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// keys are the keys of fs.
func keys(fs []finding) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, f.key)
	}
	return out
}

// launchInput is the input of a launch whose child has the proxy variables
// in both spellings (Linux, macOS), or one name each (foldCase, Windows).
func launchInput(foldCase bool) input {
	child := []string{"HTTPS_PROXY=http://127.0.0.1:7896", "https_proxy=http://127.0.0.1:7896", "NO_PROXY=localhost", "no_proxy=localhost",
		"HTTP_PROXY=http://127.0.0.1:7896", "http_proxy=http://127.0.0.1:7896", "ANTHROPIC_BASE_URL=http://127.0.0.1:7896/pool/p"}
	if foldCase {
		child = []string{"HTTPS_PROXY=http://127.0.0.1:7896", "NO_PROXY=localhost", "HTTP_PROXY=http://127.0.0.1:7896", "ANTHROPIC_BASE_URL=http://127.0.0.1:7896/pool/p"}
	}
	return input{launcherSet: changedVars(nil, child), child: envMap(child), names: envrewrite.NamesFor(map[bool]string{true: "windows", false: "linux"}[foldCase])}
}

func TestAgentOverrides(t *testing.T) {
	in := launchInput(false)
	t.Run("OPS-8/claude-lower-case-https-proxy-and-added-no-proxy-hosts-bypass", func(t *testing.T) {
		// Claude Code reads https_proxy before HTTPS_PROXY, and the launcher
		// sets both: the file's upper-case key is never read; it joins
		// no_proxy and NO_PROXY, so a host either adds goes direct.
		got := keys(claudeOverrides([]byte(`{"env":{"HTTPS_PROXY":"http://127.0.0.1:7000","https_proxy":"http://127.0.0.1:7000","API_TIMEOUT_MS":"1","NO_PROXY":"x","ANTHROPIC_BASE_URL":"http://x"},"model":"opus"}`), in))
		if want := []string{"env.ANTHROPIC_BASE_URL", "env.NO_PROXY", "env.https_proxy"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("got %v want %v", got, want)
		}
		if got := keys(claudeOverrides([]byte(`{"env":{"HTTPS_PROXY":"http://127.0.0.1:7000","HTTP_PROXY":"http://127.0.0.1:7000","no_proxy":"LOCALHOST"}}`), in)); len(got) != 0 {
			t.Fatalf("upper-case proxy keys or a no_proxy adding no host warned: %v", got)
		}
	})
	t.Run("OPS-8/claude-http-proxy-is-not-a-bypass", func(t *testing.T) {
		// Claude Code takes http_proxy only when neither https_proxy
		// spelling is set, for every URL: with the launcher's it is never
		// read (it was reported).
		if got := keys(claudeOverrides([]byte(`{"env":{"http_proxy":"http://127.0.0.1:7000"}}`), in)); len(got) != 0 {
			t.Fatalf("env.http_proxy warned: %v", got)
		}
	})
	t.Run("OPS-8/claude-either-spelling-bypasses-where-names-fold", func(t *testing.T) {
		// On Windows the launcher sets one name, which a key of either
		// spelling replaces.
		got := keys(claudeOverrides([]byte(`{"env":{"HTTPS_PROXY":"http://a","no_proxy":"*"}}`), launchInput(true)))
		if want := []string{"env.HTTPS_PROXY", "env.no_proxy"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("got %v want %v", got, want)
		}
	})
	t.Run("ENV-1/claude-settings-not-json-or-no-env", func(t *testing.T) {
		for _, doc := range []string{`{`, `{"model":"x"}`, ``, `[1]`} {
			if got := claudeOverrides([]byte(doc), in); len(got) != 0 {
				t.Fatalf("%q: %v", doc, got)
			}
		}
	})
	t.Run("OPS-8/codex-dotenv-keys-by-its-table", func(t *testing.T) {
		// Codex's own HTTP client reads HTTPS_PROXY and HTTP_PROXY before
		// their lower-case spellings, which the launcher's upper-case ones
		// shadow; the commands it runs (git, curl) read https_proxy first
		// and http_proxy only: a lower-case key bypasses for them, and the
		// warning says so.
		doc := "# proxy\nexport HTTPS_PROXY=http://127.0.0.1:9\nhttp_proxy = http://127.0.0.1:9\nALL_PROXY=http://127.0.0.1:9\nOPENAI_API_KEY=sk\n#HTTP_PROXY=x\nHTTPS_PROXY=again\nnot a line\n"
		got := codexDotEnvOverrides([]byte(doc), in)
		if want := []string{"HTTPS_PROXY", "http_proxy"}; !reflect.DeepEqual(keys(got), want) {
			t.Fatalf("got %v want %v", keys(got), want)
		}
		if got[0].what != "Codex loads over the launcher's environment at start" || !strings.Contains(got[1].what, "the commands it runs (git, curl)") {
			t.Fatalf("reasons %q, %q", got[0].what, got[1].what)
		}
		if got := codexDotEnvOverrides([]byte("ALL_PROXY=http://127.0.0.1:9\nall_proxy=x\nno_proxy=x\nOPENAI_API_KEY=sk\n"), in); len(got) != 0 {
			t.Fatalf("keys the launcher's variables shadow, got %v", got)
		}
		if got, want := keys(codexDotEnvOverrides([]byte("http_proxy=http://127.0.0.1:9\n"), launchInput(true))), []string{"http_proxy"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("Windows, one name per variable: got %v want %v", got, want)
		}
	})
	t.Run("POOL-20/codex-model-provider-only-without-presets", func(t *testing.T) {
		doc := []byte("model = \"o3\"\nmodel_provider = \"corp\"\n[model_providers.corp]\nbase_url = \"http://127.0.0.1:9/v1\"\n")
		if got := keys(codexOverrides(doc, input{launch: Launch{PoolWithoutPresets: true}})); !reflect.DeepEqual(got, []string{"model_provider"}) {
			t.Fatalf("got %v", got)
		}
		if got := codexOverrides(doc, in); len(got) != 0 {
			t.Fatalf("with presets the -c overrides win, got %v", got)
		}
		if got := codexOverrides([]byte("model = \"o3\"\n"), input{launch: Launch{PoolWithoutPresets: true}}); len(got) != 0 {
			t.Fatalf("got %v", got)
		}
	})
	t.Run("OPS-8/qwen-settings-proxy", func(t *testing.T) {
		if got := keys(qwenOverrides([]byte(`{"proxy":"http://127.0.0.1:9","model":{"name":"q"}}`), in)); !reflect.DeepEqual(got, []string{"proxy"}) {
			t.Fatalf("got %v", got)
		}
		for _, doc := range []string{`{"proxy":""}`, `{"model":{}}`, `{`} {
			if got := qwenOverrides([]byte(doc), in); len(got) != 0 {
				t.Fatalf("%q: %v", doc, got)
			}
		}
	})
	t.Run("ENV-1/claude-managed-settings-per-os", func(t *testing.T) {
		for goos, want := range map[string]string{"linux": "/etc/claude-code/managed-settings.json",
			"darwin": "/Library/Application Support/ClaudeCode/managed-settings.json", "windows": `C:\ProgramData\ClaudeCode\managed-settings.json`} {
			if got := claudeManagedSettings(goos); got != want {
				t.Errorf("%s: %q want %q", goos, got, want)
			}
		}
	})
	t.Run("ENV-1/agent-from-argv0", func(t *testing.T) {
		for argv0, want := range map[string]string{"claude": "claude", "/opt/bin/codex": "codex", "gemini.exe": "gemini", "Claude": "claude", "qwen": "qwen", "curl": ""} {
			if got := agentName(argv0); got != want {
				t.Errorf("%q: %q want %q", argv0, got, want)
			}
		}
	})
}

// TestProxyTables checks every row of every agent's table (proxyReads)
// against a launch that sets all its proxy variables in both spellings
// (SPEC ENV-1): a variable of a first-set-wins row bypasses the launcher
// exactly when it is the first of its row, one of a joined row always, a
// no-proxy value only when it adds a host; on Windows (one name per
// variable) every spelling of a row's first variable bypasses.
func TestProxyTables(t *testing.T) {
	launched := map[string]string{}
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"} {
		launched[k], launched[strings.ToLower(k)] = "http://127.0.0.1:7896", "http://127.0.0.1:7896"
	}
	launched["NO_PROXY"], launched["no_proxy"] = "localhost,127.0.0.1", "localhost,127.0.0.1"
	for agent, rows := range proxyReads {
		seen := map[string]bool{}
		for _, row := range rows {
			for _, v := range row.vars {
				if seen[v] {
					continue
				}
				seen[v] = true
				value := "http://127.0.0.1:7000"
				if row.noProxy {
					value = "mock.test"
				}
				// v bypasses when it is read first (or joined) in some row.
				want, wantFolded := false, false
				for _, r := range rows {
					for i, rv := range r.vars {
						want = want || (rv == v && (i == 0 || r.joined))
						wantFolded = wantFolded || (strings.EqualFold(rv, v) && (strings.EqualFold(v, r.vars[0]) || r.joined))
					}
				}
				t.Run("OPS-8/"+agent+"-"+v, func(t *testing.T) {
					got := proxyBypasses(agent, map[string]string{v: value}, launched, envrewrite.NamesFor("linux"))
					if want != (len(got) == 1 && got[0] == v) {
						t.Fatalf("%s in %s's file: bypasses %v, want bypass %v", v, agent, got, want)
					}
					if row.noProxy && len(proxyBypasses(agent, map[string]string{v: "127.0.0.1, LOCALHOST"}, launched, envrewrite.NamesFor("linux"))) != 0 {
						t.Fatal("a no-proxy list adding no host counted as a bypass")
					}
					folded := map[string]string{}
					for k, val := range launched {
						folded[strings.ToUpper(k)] = val
					}
					got = proxyBypasses(agent, map[string]string{v: value}, folded, envrewrite.NamesFor("windows"))
					if wantFolded != (len(got) == 1) {
						t.Fatalf("Windows: %s in %s's file: bypasses %v, want bypass %v", v, agent, got, wantFolded)
					}
				})
			}
		}
	}
}

// TestOverrideWarningLines reads an agent's files from a temporary HOME:
// one line per file and key, naming the file (home as "~"), the key and
// what to do; files of another agent are not read.
func TestOverrideWarningLines(t *testing.T) {
	home := t.TempDir()
	write := func(t *testing.T, path, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(home, ".codex", ".env"), "HTTPS_PROXY=http://127.0.0.1:9\n")
	write(t, filepath.Join(home, ".qwen", "settings.json"), `{"proxy":"http://127.0.0.1:9"}`)
	parent := []string{"HOME=" + home}
	l := Launch{Parent: parent, Child: append(parent, "HTTPS_PROXY=http://127.0.0.1:7896", "https_proxy=http://127.0.0.1:7896")}
	t.Run("OPS-8/codex-dotenv-warning-names-file-key-and-fix", func(t *testing.T) {
		var lines []string
		for _, o := range findOverrides("codex", "", l, envrewrite.NamesFor("linux"), os.ReadFile) {
			lines = append(lines, overrideWarning("dual-proxy run", "codex", o, home))
		}
		want := []string{"dual-proxy run: warning: " + filepath.Join("~", ".codex", ".env") + " sets HTTPS_PROXY, which Codex loads over the launcher's environment at start: codex will not use dual-proxy as launched (remove it from the file)"}
		if !reflect.DeepEqual(lines, want) {
			t.Fatalf("got %q\nwant %q", lines, want)
		}
	})
	t.Run("OPS-8/codex-home-from-environment", func(t *testing.T) {
		other := t.TempDir()
		l := Launch{Parent: append(parent, "CODEX_HOME="+other), Child: l.Child}
		if got := findOverrides("codex", "", l, envrewrite.NamesFor("linux"), os.ReadFile); len(got) != 0 {
			t.Fatalf("read ~/.codex with CODEX_HOME set: %v", got)
		}
	})
	t.Run("OPS-8/qwen-settings-proxy-warning", func(t *testing.T) {
		got := findOverrides("qwen", "", l, envrewrite.NamesFor("linux"), os.ReadFile)
		if len(got) != 1 || got[0].File != filepath.Join(home, ".qwen", "settings.json") || got[0].key != "proxy" {
			t.Fatalf("got %+v", got)
		}
		if got := findOverrides("gemini", "", l, envrewrite.NamesFor("linux"), os.ReadFile); len(got) != 0 {
			t.Fatalf("gemini: %+v", got)
		}
	})
}
