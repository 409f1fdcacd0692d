package cli

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/app/settings"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
	"github.com/dual-proxy/dual-proxy/proxy/route"
)

// runCmd runs a command line (DualProxy or Claude) in-process with env and
// returns stdout, stderr and the status.
func runCmd(t *testing.T, f func([]string, IO) int, env []string, args ...string) (string, string, int) {
	t.Helper()
	dir := t.TempDir()
	out, _ := os.Create(filepath.Join(dir, "out"))
	errf, _ := os.Create(filepath.Join(dir, "err"))
	defer out.Close()
	defer errf.Close()
	// The user's directories are the test's own unless env sets them.
	env = withDefaults(env, "HOME="+dir)
	env = ownRegistry(env, dir)
	status := f(args, IO{Stdout: out, Stderr: errf, Environ: env})
	o, _ := os.ReadFile(out.Name())
	e, _ := os.ReadFile(errf.Name())
	return string(o), string(e), status
}

// ownRegistry gives env a registry of the test's own under dir
// (XDG_RUNTIME_DIR, %LocalAppData%) unless env names one itself: a test that
// chose its registry keeps it on every OS, and one that did not never lists
// or joins the user's running instances.
func ownRegistry(env []string, dir string) []string {
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); strings.EqualFold(k, "XDG_RUNTIME_DIR") || strings.EqualFold(k, "LOCALAPPDATA") {
			return env
		}
	}
	return append([]string{"XDG_RUNTIME_DIR=" + filepath.Join(dir, "run"), "LOCALAPPDATA=" + filepath.Join(dir, "local")}, env...)
}

// withDefaults puts each NAME=VALUE of defaults before env unless env sets
// NAME itself. Names compare without case: on Windows LOCALAPPDATA and
// LocalAppData are one variable, and the first one wins there, so a default
// ahead of the test's own value would hide it.
func withDefaults(env []string, defaults ...string) []string {
	var add []string
	for _, d := range defaults {
		name, _, _ := strings.Cut(d, "=")
		set := false
		for _, kv := range env {
			if k, _, _ := strings.Cut(kv, "="); strings.EqualFold(k, name) {
				set = true
				break
			}
		}
		if !set {
			add = append(add, d)
		}
	}
	return append(add, env...)
}

func TestClaudeDefaults(t *testing.T) {
	t.Run("RUN-1b/health-url-from-ANTHROPIC_BASE_URL", func(t *testing.T) {
		out, errOut, status := runCmd(t, Claude, []string{"ANTHROPIC_BASE_URL=https://llm.example.test:8443/anthropic/v1"}, "--print-config")
		if status != 0 {
			t.Fatalf("status %d %q", status, errOut)
		}
		if !strings.Contains(out, "health-url:") || !strings.Contains(out, "https://llm.example.test:8443\n") {
			t.Fatalf("health URL is not the origin of ANTHROPIC_BASE_URL:\n%s", out)
		}
	})
	t.Run("RUN-1b/health-url-default-anthropic", func(t *testing.T) {
		out, _, status := runCmd(t, Claude, nil, "--print-config")
		if status != 0 || !strings.Contains(out, "https://api.anthropic.com\n") {
			t.Fatalf("status %d:\n%s", status, out)
		}
	})
	t.Run("RUN-1b/explicit-health-url-wins", func(t *testing.T) {
		out, _, status := runCmd(t, Claude, []string{"ANTHROPIC_BASE_URL=https://llm.example.test"}, "--health-url", "", "--print-config")
		if status != 0 || strings.Contains(out, "llm.example.test") {
			t.Fatalf("status %d:\n%s", status, out)
		}
	})
	t.Run("RUN-1/command-override", func(t *testing.T) {
		out, _, status := runCmd(t, Claude, nil, "--command", "/opt/claude/bin/claude", "--print-config", "--", "-p", "hi")
		if status != 0 || !strings.Contains(out, "/opt/claude/bin/claude -p hi") {
			t.Fatalf("status %d:\n%s", status, out)
		}
	})
	t.Run("OPS-1/launcher-log-file-under-state-dir", func(t *testing.T) {
		// XDG_STATE_HOME is the base on Linux, %LocalAppData% on Windows (paths_test.go has every OS).
		env := []string{"XDG_STATE_HOME=/var/tmp/st", `LOCALAPPDATA=C:\st`}
		out, _, _ := runCmd(t, Claude, env, "--print-config")
		want, ok := map[string]string{"linux": "/var/tmp/st/dual-proxy/launcher.log", "darwin": "/Library/Logs/dual-proxy/launcher.log",
			"windows": `C:\st\dual-proxy\logs\launcher.log`}[runtime.GOOS]
		if !ok || !strings.Contains(out, want) {
			t.Fatalf("log file not shown:\n%s", out)
		}
	})
}

func TestOpenProxyWarning(t *testing.T) {
	for _, tc := range []struct {
		host string
		warn bool
	}{{"127.0.0.1", false}, {"::1", false}, {"localhost", false}, {"0.0.0.0", true}, {"192.168.1.5", true}, {"::", true}} {
		t.Run("LIS-2/"+tc.host, func(t *testing.T) {
			var buf bytes.Buffer
			warnOpenProxy(tc.host, slog.New(slog.NewTextHandler(&buf, nil)))
			if got := strings.Contains(buf.String(), "open proxy"); got != tc.warn {
				t.Fatalf("warning %v, want %v: %q", got, tc.warn, buf.String())
			}
		})
	}
}

func TestHardening(t *testing.T) {
	t.Run("LIS-4/health-url-credentials-and-query-redacted", func(t *testing.T) {
		out, _, status := runCmd(t, DualProxy, nil, "--print-config", "--health-url", "https://user:hunter2@127.0.0.1:9/x?token=abc")
		if status != 0 || strings.Contains(out, "hunter2") || strings.Contains(out, "token=abc") {
			t.Fatalf("status %d:\n%s", status, out)
		}
	})
	t.Run("GW-3/typo-password-never-echoed", func(t *testing.T) {
		_, errOut, status := runCmd(t, DualProxy, nil, "--print-config", "--upstream-url", "http://user:hunter2:127.0.0.1:1")
		if status != 2 || strings.Contains(errOut, "hunter2") {
			t.Fatalf("status %d: %q", status, errOut)
		}
		out, _, _ := runCmd(t, DualProxy, []string{"HTTPS_PROXY=http://user:hunter2:127.0.0.1:1"}, "--print-config")
		if strings.Contains(out, "hunter2") {
			t.Fatalf("warning echoes the password:\n%s", out)
		}
	})
	t.Run("LIS-5/huge-durations-and-bad-listen-host-exit-2", func(t *testing.T) {
		for _, args := range [][]string{
			{"--timeout-ms", "9999999999999"},
			{"--cooldown-ms", "9300000000000"},
			{"--listen-host", "999.1.1.1"},
			{"--listen-host", "example.com"},
		} {
			_, errOut, status := runCmd(t, DualProxy, nil, append(args, "--print-config")...)
			if status != 2 || !strings.Contains(errOut, strings.TrimPrefix(args[0], "--")) {
				t.Errorf("%v: status %d %q", args, status, errOut)
			}
		}
	})
}

func TestTunnelAndHeadFlags(t *testing.T) {
	t.Run("LIS-4/tunnel-and-head-bounds-shown-with-defaults", func(t *testing.T) {
		out, _, status := runCmd(t, DualProxy, nil, "--print-config")
		for _, want := range []string{"tunnel-idle-timeout-ms:", "3600000", "tunnel-half-close-timeout-ms:", "60000", "head-timeout-ms:", "10000"} {
			if status != 0 || !strings.Contains(out, want) {
				t.Fatalf("status %d, %q missing:\n%s", status, want, out)
			}
		}
	})
	t.Run("LIS-5/head-timeout-zero-exit-2", func(t *testing.T) {
		_, errOut, status := runCmd(t, DualProxy, nil, "--head-timeout-ms", "0", "--print-config")
		if status != 2 || !strings.Contains(errOut, "head-timeout-ms") {
			t.Fatalf("status %d: %q", status, errOut)
		}
	})
	t.Run("LIS-4/tunnel-bound-zero-means-none", func(t *testing.T) {
		v := flagDefaults(modeServe)
		v[settings.TunnelIdleMS], v[settings.TunnelHalfMS] = 0, 1000
		r, fes := settings.Check(v, settings.Env{})
		if fes != nil {
			t.Fatal(fes)
		}
		cfg, _, err := r.ProxyConfig(0)
		if err != nil || cfg.TunnelIdleTimeout >= 0 || cfg.TunnelHalfCloseTimeout != time.Second {
			t.Fatalf("0 must map to proxy.Config's no-bound (negative): %v %v %v", cfg.TunnelIdleTimeout, cfg.TunnelHalfCloseTimeout, err)
		}
	})
}

func TestRules(t *testing.T) {
	for _, tc := range []struct{ flag, pattern string }{
		{"--prefer-direct", "a.example.com/path"},
		{"--prefer-direct", "a.example.com:443"},
		{"--prefer-proxy", "api.(openai|anthropic).com"},
	} {
		t.Run("ORD-3/invalid-pattern-exit-2/"+tc.pattern, func(t *testing.T) {
			_, errOut, status := runCmd(t, DualProxy, nil, tc.flag, tc.pattern, "--print-config")
			if status != 2 || !strings.Contains(errOut, tc.pattern) || !strings.Contains(errOut, strings.TrimPrefix(tc.flag, "--")) {
				t.Fatalf("status %d: %q", status, errOut)
			}
		})
	}
	t.Run("ORD-3b/no-proxy-and-patterns-shown", func(t *testing.T) {
		out, _, status := runCmd(t, DualProxy, []string{"NO_PROXY=.local"}, "--prefer-direct", "*.corp.example,intranet", "--print-config")
		if status != 0 || !strings.Contains(out, "*.corp.example,intranet") || !strings.Contains(out, ".local") {
			t.Fatalf("status %d:\n%s", status, out)
		}
	})
}

func TestOpenProxyWarningOnLauncherTerminal(t *testing.T) {
	t.Run("LIS-2/launcher-says-it-on-stderr-not-only-in-its-log-file", func(t *testing.T) {
		// 192.0.2.1 (TEST-NET-1) is on no interface: the bind fails after the
		// warning, so nothing is ever exposed.
		env := []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
		args := []string{"run", "--listen-host", "192.0.2.1", "--health-url", "", "--log-file", filepath.Join(t.TempDir(), "l.log"), "--"}
		_, errOut, _ := runCmdEnv(t, DualProxy, env, append(args, testworld.Child(t, "exit", "0")...)...)
		if !strings.Contains(errOut, "dual-proxy: warning: listening on 192.0.2.1, not loopback: this is an unauthenticated open proxy") {
			t.Fatalf("stderr %q", errOut)
		}
	})
}

func TestLaunchersAvoidStandalonePort(t *testing.T) {
	spec := route.CandidateSpec{UpstreamHost: "127.0.0.1", UpstreamPort: 7897, ListenHost: "127.0.0.1", ListenPort: 7896}
	for _, tc := range []struct {
		name  string
		m     mode
		avoid bool
	}{{"run", modeRun, true}, {"claude", modeClaude, true}, {"standalone", modeServe, false}} {
		t.Run("LIS-1/"+tc.name+"-fallback-skips-7898", func(t *testing.T) {
			v := settings.Values{settings.ListenHost: "127.0.0.1", settings.ListenPort: 7896, settings.PortFallback: 10}
			s := &Settings{Mode: tc.m, Live: v, Resolved: &settings.Resolved{Values: v, Spec: spec}}
			got := s.AvoidPorts()
			if slices.Contains(got, 7898) != tc.avoid || !slices.Contains(got, 7897) {
				t.Fatalf("avoid ports %v: 7898 avoided should be %v, 7897 (gateway) always", got, tc.avoid)
			}
		})
	}
}

func TestGatewayWarningsOnLauncherTerminal(t *testing.T) {
	t.Run("GW-3/launcher-prints-skipped-gateway-on-stderr-redacted", func(t *testing.T) {
		env := []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
		logFile := filepath.Join(t.TempDir(), "l.log")
		args := []string{"run", "--listen-port", "0", "--health-url", "",
			"--gateway", "localhost:99999", "--gateway", "http://user:s3cret@127.0.0.1:1/x?y=1", "--log-file", logFile, "--"}
		_, errOut, status := runCmdEnv(t, DualProxy, env, append(args, testworld.Child(t, "exit", "0")...)...)
		if status != 0 {
			t.Fatalf("status %d, stderr %q", status, errOut)
		}
		var lines []string
		for _, l := range strings.Split(errOut, "\n") {
			if strings.HasPrefix(l, "dual-proxy: warning: skipping gateway") {
				lines = append(lines, l)
			}
		}
		if len(lines) != 2 || !strings.Contains(lines[0], "localhost:99999") || strings.Contains(errOut, "s3cret") {
			t.Fatalf("want two skipped-gateway warnings, redacted; stderr %q", errOut)
		}
	})
}

// TestEmptyFirstGateway: ” for upstream-url or upstream-host means no
// first gateway from every source (flag, environment, the config file's
// proxy: section), so a machine without the default local gateway can
// drop 127.0.0.1:7897; not giving upstream-url keeps it (SPEC GW-1,
// OPS-7; docs/flags.md "What 0 and ” mean").
func TestEmptyFirstGateway(t *testing.T) {
	file := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(file, []byte("proxy:\n  upstream-url: ''\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	hostFile := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(hostFile, []byte("proxy:\n  upstream-host: ''\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		env   []string // also set in the process: urfave/cli reads the variables there
		args  []string
		first bool // 127.0.0.1:7897 is a candidate
	}{
		{"GW-1/not-given-keeps-the-default-first-gateway", nil, nil, true},
		{"OPS-7/empty-upstream-url-flag", nil, []string{"--upstream-url", ""}, false},
		{"OPS-7/empty-upstream-url-flag-with-equals", nil, []string{"--upstream-url="}, false},
		{"OPS-7/empty-upstream-host-flag", nil, []string{"--upstream-host", ""}, false},
		{"OPS-7/empty-UPSTREAM_URL", []string{"UPSTREAM_URL="}, nil, false},
		{"OPS-7/empty-UPSTREAM_HOST", []string{"UPSTREAM_HOST="}, nil, false},
		{"OPS-7/empty-upstream-url-in-the-file", nil, []string{"--config", file}, false},
		{"OPS-7/empty-upstream-host-in-the-file", nil, []string{"--config", hostFile}, false},
		{"OPS-7/upstream-url-wins-over-an-empty-upstream-host", nil, []string{"--upstream-host", "", "--upstream-url", "http://127.0.0.1:7897"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, kv := range tc.env {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
			out, errOut, status := runCmd(t, DualProxy, tc.env, append(tc.args, "--health-url", "", "--print-config")...)
			if status != 0 {
				t.Fatalf("status %d: %s", status, errOut)
			}
			_, cands, _ := strings.Cut(out, "candidates (default order):\n")
			if strings.Contains(cands, "127.0.0.1:7897") != tc.first {
				t.Fatalf("127.0.0.1:7897 a candidate: want %v\n%s", tc.first, out)
			}
		})
	}
}

func TestRunHealthURL(t *testing.T) {
	for _, tc := range []struct {
		name, argv0 string
		env         []string
		want, why   string
	}{
		{"RUN-1b/run-claude-follows-ANTHROPIC_BASE_URL", "/usr/local/bin/claude", []string{"ANTHROPIC_BASE_URL=https://llm.example.test:8443/v1"}, "https://llm.example.test:8443", "claude: the origin of $ANTHROPIC_BASE_URL"},
		{"RUN-1b/run-codex-vendor-api", "codex", nil, "https://api.openai.com", "codex: its vendor's API ($OPENAI_BASE_URL unset)"},
		{"RUN-1b/run-gemini-follows-GOOGLE_GEMINI_BASE_URL", "gemini.exe", []string{"GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:9000"}, "http://127.0.0.1:9000", "gemini: the origin of $GOOGLE_GEMINI_BASE_URL"},
		{"RUN-1b/run-qwen-without-base-url-says-why", "qwen", nil, defaultHealthURL, "qwen: $OPENAI_BASE_URL is unset and its provider is the user's choice"},
		{"RUN-1b/run-other-command-says-why", "curl", nil, defaultHealthURL, "curl is not an agent the launcher recognises"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, why := runHealthURL(tc.argv0, tc.env)
			if u != tc.want || !strings.HasPrefix(why, tc.why) {
				t.Fatalf("runHealthURL(%q) = %q, %q; want %q, %q…", tc.argv0, u, why, tc.want, tc.why)
			}
		})
	}
	t.Run("RUN-1b/run-print-config-shows-the-agents-url", func(t *testing.T) {
		out, errOut, status := runCmd(t, DualProxy, nil, "run", "--print-config", "--", "codex", "exec", "hi")
		if status != 0 || !strings.Contains(out, "https://api.openai.com\n") {
			t.Fatalf("status %d %q:\n%s", status, errOut, out)
		}
		out, _, status = runCmd(t, DualProxy, nil, "run", "--health-url", "", "--print-config", "--", "codex")
		if status != 0 || strings.Contains(out, "api.openai.com") {
			t.Fatalf("an explicit --health-url did not win: status %d:\n%s", status, out)
		}
	})
}

// A boolean key's environment variable is read by the parser the file and
// the API use (SPEC OPS-7): VERIFY_TLS=no is verify-tls: no, and a word
// none of them takes is refused naming the variable, not repeating it.
func TestBoolEnvOneParser(t *testing.T) {
	for _, tc := range []struct{ val, want string }{
		{"no", "false"}, {"off", "false"}, {"OFF", "false"}, {"0", "false"},
		{"yes", "true"}, {"on", "true"}, {"true", "true"},
	} {
		t.Run("OPS-7/VERIFY_TLS="+tc.val, func(t *testing.T) {
			t.Setenv("VERIFY_TLS", tc.val)
			out, errOut, status := runCmd(t, DualProxy, []string{"VERIFY_TLS=" + tc.val}, "--print-config")
			if status != 0 {
				t.Fatalf("status %d: %s", status, errOut)
			}
			if !regexp.MustCompile(`(?m)^verify-tls:\s+` + tc.want + `$`).MatchString(out) {
				t.Fatalf("want verify-tls %s:\n%s", tc.want, out)
			}
		})
	}
	t.Run("OPS-7/VERIFY_TLS-refused-without-its-value", func(t *testing.T) {
		t.Setenv("VERIFY_TLS", "maybe-secret")
		_, errOut, status := runCmd(t, DualProxy, []string{"VERIFY_TLS=maybe-secret"}, "--print-config")
		if status == 0 || !strings.Contains(errOut, "VERIFY_TLS") || strings.Contains(errOut, "maybe-secret") {
			t.Fatalf("status %d: %s", status, errOut)
		}
	})
}
