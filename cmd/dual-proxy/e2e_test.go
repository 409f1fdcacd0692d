package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
)

// bin is the dual-proxy binary for these end-to-end tests: a copy of the test binary named
// dual-proxy (dual-proxy.exe), which runs main when started under that name; the test binary
// is also the launcher's child, started by testworld.Child. No `go build`, sh or curl: the same
// tests run on Windows under Wine (SPEC PLAT-1).
var bin string

func TestMain(m *testing.M) {
	testworld.ChildMain(childRoles)
	if name := filepath.Base(os.Args[0]); name == "dual-proxy" || strings.EqualFold(name, "dual-proxy.exe") {
		main()
	}
	dir, err := os.MkdirTemp("", "dual-proxy-e2e-")
	if err != nil {
		panic(err)
	}
	if bin, err = testworld.CopyExecutable(dir, "dual-proxy"); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// baseEnv is the clean, proxy-free environment of a dual-proxy process: its per-user
// directories (XDG ones on Linux, %AppData% and %LocalAppData% on Windows) under home.
// XDG_RUNTIME_DIR is home too (a t.TempDir, 0700 as the XDG spec wants), so the
// instances the tests start register there (SPEC OPS-6), not in the user's own
// registry, where `dual-proxy status` and `pool test` would list them.
func baseEnv(home string) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home,
		"XDG_STATE_HOME=" + filepath.Join(home, "state"), "XDG_RUNTIME_DIR=" + home,
		"APPDATA=" + filepath.Join(home, "roaming"), "LOCALAPPDATA=" + filepath.Join(home, "local")}
}

// launch runs the binary with args and a clean, proxy-free environment
// whose HOME and state dir are temporary. It returns combined stdout,
// stderr and the exit status.
func launch(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	home := t.TempDir()
	cmd.Env = append(baseEnv(home), env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		status := 0
		if ee, ok := err.(*exec.ExitError); ok {
			status = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return stdout.String(), stderr.String(), status
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%v timed out; stdout %q stderr %q", args, stdout.String(), stderr.String())
	}
	return "", "", -1
}

// runArgs is the argv of `dual-proxy run` on any port without health checks, with ARGS, then CHILD.
func runArgs(child []string, args ...string) []string {
	return append(append(append([]string{"run", "--listen-port", "0", "--health-url", ""}, args...), "--"), child...)
}

func TestLauncherEndToEnd(t *testing.T) {
	t.Run("RUN-1/dead-gateway-then-working-gateway-http-and-https", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		tlsOrigin := testworld.NewTLSOrigin(t)
		good := testworld.NewGateway(t)
		dead := testworld.RefusedAddr(t)
		_, deadPort, _ := net.SplitHostPort(dead)
		cert := filepath.Join(t.TempDir(), "cert.pem")
		if err := os.WriteFile(cert, tlsOrigin.CertPEM, 0o600); err != nil {
			t.Fatal(err)
		}
		for i, u := range []string{origin.URL + "/hello", tlsOrigin.URL + "/hello"} {
			out, errOut, status := launch(t, nil, runArgs(testworld.Child(t, "fetch", "-cacert", cert, u),
				// Racing off: on a busy machine the good gateway may answer after the race
				// delay, and direct to the loopback origin would win (ORD-6).
				"--upstream-port", deadPort, "--gateway", good.Addr, "--loopback-direct=false", "--race-delay-ms", "0")...)
			if status != 0 {
				t.Fatalf("%s: status %d; stdout %q stderr %q", u, status, out, errOut)
			}
			if !strings.HasPrefix(out, "origin ") {
				t.Fatalf("%s: child printed %q", u, out)
			}
			if i == 0 && good.Requests() != 1 {
				t.Fatalf("working gateway saw %d plain requests", good.Requests())
			}
			if i == 1 && good.Connects() != 1 {
				t.Fatalf("working gateway saw %d CONNECTs", good.Connects())
			}
		}
	})

	t.Run("RUN-3/exit-statuses", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			cmd  []string
			want int
		}{
			{"exit-42", testworld.Child(t, "exit", "42"), 42},
			{"unknown-command-127", []string{"no-such-command-dual-proxy-test"}, 127},
			{"success-0", testworld.Child(t, "exit", "0"), 0},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, errOut, status := launch(t, nil, runArgs(tc.cmd)...)
				if status != tc.want {
					t.Fatalf("status %d, want %d (stderr %q)", status, tc.want, errOut)
				}
			})
		}
	})

	t.Run("LIS-1/port-fallback-child-sees-bound-port", func(t *testing.T) {
		// Hold two consecutive ports? Hold P; the launcher must bind P+1
		// (retry with another P if P+1 happens to be taken).
		// Ports below the ephemeral range (32768+), so no outgoing
		// connection of a parallel test takes P+1 between probe and launch.
		base := 21000 + int(time.Now().UnixNano()%9000)
		for attempt := 0; attempt < 50; attempt++ {
			p := base + attempt*7
			held, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				continue
			}
			probe, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+1))
			if err != nil {
				held.Close()
				continue
			}
			probe.Close()
			// On Windows https_proxy and HTTPS_PROXY are one variable.
			out, errOut, status := launch(t, []string{"https_proxy=http://stale.invalid:1"},
				runArgs(testworld.Child(t, "env", "HTTPS_PROXY", "https_proxy", "NO_PROXY"), "--listen-port", strconv.Itoa(p))...)
			held.Close()
			if status != 0 {
				t.Fatalf("status %d stderr %q", status, errOut)
			}
			want := fmt.Sprintf("http://127.0.0.1:%d\nhttp://127.0.0.1:%d\n", p+1, p+1)
			if !strings.HasPrefix(out, want) {
				t.Fatalf("child saw %q, want prefix %q", out, want)
			}
			mustContain(t, out, "localhost,127.0.0.1,::1,[::1]")
			return
		}
		t.Fatal("could not find two free consecutive ports")
	})

	t.Run("LIS-1/fallback-skips-a-loopback-gateway-port", func(t *testing.T) {
		// Port P busy, P+1 is the (currently down) first gateway: the
		// launcher must bind P+2, not lock the gateway out of its port.
		base := 24000 + int(time.Now().UnixNano()%6000)
		for attempt := 0; attempt < 50; attempt++ {
			p := base + attempt*7
			held, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				continue
			}
			free := true
			for _, q := range []int{p + 1, p + 2} {
				l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(q))
				if err != nil {
					free = false
					break
				}
				l.Close()
			}
			if !free {
				held.Close()
				continue
			}
			out, errOut, status := launch(t, nil, runArgs(testworld.Child(t, "env", "HTTP_PROXY"),
				"--listen-port", strconv.Itoa(p), "--upstream-port", strconv.Itoa(p+1))...)
			held.Close()
			if status != 0 {
				t.Fatalf("status %d stderr %q", status, errOut)
			}
			if want := fmt.Sprintf("http://127.0.0.1:%d\n", p+2); out != want {
				t.Fatalf("child saw %q, want %q", out, want)
			}
			return
		}
		t.Fatal("could not find three free consecutive ports")
	})

	t.Run("RUN-2/busy-ports-child-not-started", func(t *testing.T) {
		held, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer held.Close()
		p := held.Addr().(*net.TCPAddr).Port
		marker := filepath.Join(t.TempDir(), "ran")
		_, errOut, status := launch(t, nil, runArgs(testworld.Child(t, "touch", marker), "--listen-port", strconv.Itoa(p), "--port-fallback", "0")...)
		if status == 0 {
			t.Fatal("launcher exited 0 without a listener")
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatal("child started although the proxy could not")
		}
		mustContain(t, errOut, "see which process holds them with `") // the per-OS command: proxy TestListen
	})
}

func TestConfig(t *testing.T) {
	t.Run("GW-2/own-listener-excluded-from-candidates", func(t *testing.T) {
		out, errOut, status := launch(t, []string{"HTTPS_PROXY=http://127.0.0.1:7898", "http_proxy=http://localhost:7898"}, "--print-config", "--gateway", "127.0.0.1:7898", "--gateway", "10.0.0.1:3128")
		if status != 0 {
			t.Fatalf("status %d stderr %q", status, errOut)
		}
		cands, _, _ := strings.Cut(out[strings.Index(out, "candidates"):], "warnings:")
		if strings.Contains(cands, ":7898") {
			t.Fatalf("self-loop candidate listed:\n%s", out)
		}
		mustContain(t, out, "http://10.0.0.1:3128")
		mustContain(t, out, "direct")
	})
	t.Run("LIS-4/flags-from-environment", func(t *testing.T) {
		out, errOut, status := launch(t, []string{"LISTEN_PORT=18123", "GATEWAY=10.0.0.7:3128,10.0.0.8:8080", "PREFER_DIRECT=*.corp.example",
			"TIMEOUT_MS=1234", "COOLDOWN_MS=0", "VERIFY_TLS=0", "HEALTH_URL="}, "--print-config")
		if status != 0 {
			t.Fatalf("status %d %q", status, errOut)
		}
		for _, want := range []string{"127.0.0.1:18123", "http://10.0.0.7:3128", "http://10.0.0.8:8080", "*.corp.example", "timeout-ms:", "1234", "verify-tls:", "health-url:"} {
			mustContain(t, out, want)
		}
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "verify-tls:") && !strings.HasSuffix(l, "false") {
				t.Fatalf("VERIFY_TLS=0 not applied: %q", l)
			}
		}
		// A flag on the command line wins over its variable.
		out, _, _ = launch(t, []string{"LISTEN_PORT=18123"}, "--listen-port", "18124", "--print-config")
		mustContain(t, out, "127.0.0.1:18124")
	})
	t.Run("LIS-4/print-config-redacts-credentials", func(t *testing.T) {
		out, _, status := launch(t, nil, "--print-config", "--upstream-url", "http://alice:s3cr3t-pw@127.0.0.1:3128")
		if status != 0 || strings.Contains(out, "s3cr3t-pw") {
			t.Fatalf("status %d, output:\n%s", status, out)
		}
		mustContain(t, out, "alice:***@127.0.0.1:3128")
	})
	t.Run("GW-7/parent-all-proxy-socks5h-is-a-candidate-with-its-kind", func(t *testing.T) {
		out, errOut, status := launch(t, []string{"ALL_PROXY=socks5h://gwuser:s3cr3t-pw@127.0.0.1:7890", "https_proxy=https://proxy.example:8443"},
			"--print-config", "--gateway", "socks5://127.0.0.1:1081", "--upstream-url", "http://127.0.0.1:3128")
		if status != 0 || strings.Contains(out, "s3cr3t-pw") {
			t.Fatalf("status %d stderr %q output:\n%s", status, errOut, out)
		}
		cands := out[strings.Index(out, "candidates"):]
		order := []string{"http://127.0.0.1:3128", "socks5://127.0.0.1:1081", "https://proxy.example:8443", "socks5h://gwuser:***@127.0.0.1:7890", "direct"}
		last := -1
		for _, want := range order {
			i := strings.Index(cands, want)
			if i < last {
				t.Fatalf("%s missing or out of order:\n%s", want, cands)
			}
			last = i
		}
		for _, line := range []string{"socks5h  (env:ALL_PROXY)", "https    (env:" + envLabel("https_proxy") + ")", "socks5   (gateway)"} {
			mustContain(t, cands, line)
		}
		// GATEWAY takes every kind too.
		_, errOut, status = launch(t, []string{"GATEWAY=socks5h://127.0.0.1:1082,https://gw.example:8443/?ca=%2Fdev%2Fnull"}, "--print-config")
		if status != 2 || !strings.Contains(errOut, "GATEWAY") || !strings.Contains(errOut, "gateway CA file") {
			t.Fatalf("GATEWAY with a CA path that is no regular file (GW-6): status %d %q", status, errOut)
		}
		out, errOut, status = launch(t, []string{"GATEWAY=socks5h://127.0.0.1:1082,https://gw.example"}, "--print-config")
		if status != 0 {
			t.Fatalf("GATEWAY: status %d %q", status, errOut)
		}
		mustContain(t, out, "socks5h://127.0.0.1:1082")
		mustContain(t, out, "https://gw.example:443")
	})
	t.Run("GW-3/socks4-extra-skipped-with-one-warning", func(t *testing.T) {
		out, _, status := launch(t, []string{"ALL_PROXY=socks4a://127.0.0.1:1080", "all_proxy=socks4a://127.0.0.1:1080"}, "--print-config")
		if status != 0 || strings.Count(out, "socks4a://127.0.0.1:1080") != 1 {
			t.Fatalf("status %d, want exactly one warning:\n%s", status, out)
		}
		mustContain(t, out, "use socks5:// or socks5h://")
	})
	t.Run("LIS-5/bad-values-exit-2-one-line", func(t *testing.T) {
		for _, args := range [][]string{
			{"--listen-port", "70000"},
			{"--listen-port", "abc"},
			{"--upstream-url", "socks4://127.0.0.1:1080"},
			{"--upstream-url", "https://127.0.0.1:3128/?ca=/nonexistent/ca.pem"},
			{"--timeout-ms", "0"},
			{"--log-format", "xml"},
			{"--no-such-flag"},
		} {
			_, errOut, status := launch(t, nil, append(args, "--print-config")...)
			if status != 2 {
				t.Errorf("%v: status %d, want 2 (stderr %q)", args, status, errOut)
				continue
			}
			if lines := strings.Count(strings.TrimSpace(errOut), "\n"); lines != 0 {
				t.Errorf("%v: error is %d lines: %q", args, lines+1, errOut)
			}
			flag := strings.TrimPrefix(args[0], "--")
			if !strings.Contains(errOut, flag) {
				t.Errorf("%v: error %q does not name the flag", args, errOut)
			}
		}
	})
}

func TestDemo(t *testing.T) {
	t.Run("RUN-1/demo-with-curl", func(t *testing.T) {
		needCurl(t)
		out, errOut, status := launch(t, nil, "demo")
		if status != 0 {
			t.Fatalf("status %d\n%s\n%s", status, out, errOut)
		}
		mustContain(t, out, "hello from the loopback origin over http\n")
		mustContain(t, out, "hello from the loopback origin over https\n")
		if strings.Count(out, "], next candidate\n") != 2 {
			t.Fatalf("demo output lacks the failovers:\n%s", out)
		}
	})
	t.Run("RUN-1/demo-with-built-in-client", func(t *testing.T) {
		out, errOut, status := launch(t, nil, "demo", "--no-curl")
		if status != 0 {
			t.Fatalf("status %d\n%s\n%s", status, out, errOut)
		}
		mustContain(t, out, "hello from the loopback origin over https\n")
	})
}

func mustContain(t *testing.T, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Fatalf("%q does not contain %q", s, sub)
	}
}
