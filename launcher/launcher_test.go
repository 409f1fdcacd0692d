package launcher

import (
	"context"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/proxy"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(child(role, os.Args[1:]))
	}
	goleak.VerifyTestMain(m)
}

// childEnv names the role the test binary plays when Run starts it as the
// child: the same program on every OS, where "sh -c" would exist only on Unix.
const childEnv = "LAUNCHER_TEST_CHILD"

// child plays role: "print-http-proxy" writes $HTTP_PROXY to stdout, "exit"
// exits with args[0], "touch" creates the file args[0].
func child(role string, args []string) int {
	switch role {
	case "print-http-proxy":
		os.Stdout.WriteString(os.Getenv("HTTP_PROXY"))
		return 0
	case "exit":
		n, _ := strconv.Atoi(args[0])
		return n
	case "touch":
		if err := os.WriteFile(args[0], nil, 0o600); err != nil {
			return 1
		}
		return 0
	}
	return 2
}

// childRun is the Config of a Run whose child is this test binary in role,
// with args and the environment env.
func childRun(t *testing.T, role string, args []string, env ...string) Config {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Config{
		ListenHost: "127.0.0.1",
		Proxy:      directOnly,
		Command:    append([]string{self}, args...),
		Env:        append([]string{childEnv + "=" + role}, env...),
	}
}

func directOnly(int) (proxy.Config, []string, error) {
	return proxy.Config{Candidates: []candidate.Candidate{candidate.Direct}}, nil, nil
}

func TestRun(t *testing.T) {
	t.Run("RUN-2/proxy-up-before-child-and-torn-down-after", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "out")
		f, err := os.Create(out)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var bound int
		cfg := childRun(t, "print-http-proxy", nil, "HTTP_PROXY=http://user:pw@10.1.2.3:8080")
		cfg.Stdout, cfg.Stderr = f, f
		// The child proves the proxy is listening when it starts.
		cfg.Ready = func(s *proxy.Server, port int) {
			bound = port
			c, err := net.Dial("tcp", "127.0.0.1:"+itoa(port))
			if err != nil {
				t.Errorf("proxy not listening before the child starts: %v", err)
				return
			}
			c.Close()
		}
		status, err := Run(context.Background(), cfg)
		if err != nil || status != 0 {
			t.Fatalf("status %d err %v", status, err)
		}
		b, _ := os.ReadFile(out)
		if want := "http://127.0.0.1:" + itoa(bound); string(b) != want {
			t.Fatalf("child saw HTTP_PROXY %q, want %q (ENV-1: no credentials, bound port)", b, want)
		}
		// LIS-3 / RUN-3: the port is free again once Run returned.
		deadline := time.Now().Add(3 * time.Second)
		for {
			ln, err := net.Listen("tcp", "127.0.0.1:"+itoa(bound))
			if err == nil {
				ln.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("port %d still busy after the child exited: %v", bound, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})

	t.Run("RUN-3/exit-status-passed-through", func(t *testing.T) {
		status, err := Run(context.Background(), childRun(t, "exit", []string{"7"}))
		if err != nil || status != 7 {
			t.Fatalf("status %d err %v", status, err)
		}
	})

	t.Run("RUN-2/listen-failure-child-not-started", func(t *testing.T) {
		held, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer held.Close()
		port := held.Addr().(*net.TCPAddr).Port
		marker := filepath.Join(t.TempDir(), "ran")
		cfg := childRun(t, "touch", []string{marker})
		cfg.ListenPort = port
		status, err := Run(context.Background(), cfg)
		if err == nil || status == 0 || !strings.Contains(err.Error(), "all in use") {
			t.Fatalf("status %d err %v", status, err)
		}
		if _, serr := os.Stat(marker); serr == nil {
			t.Fatal("child ran")
		}
	})
}

// TestListeningLineNamesHealth: the launcher's "proxy listening" line in
// its log file names what the health check contacts, its origin only, or
// off, as the standalone proxy's "listening" line does (SPEC HC-1; the
// README promises it for both), and how many candidates the proxy has.
func TestListeningLineNamesHealth(t *testing.T) {
	for raw, want := range map[string]string{"": "health=off", "http://127.0.0.1:9/some/path?tok=x": "health=http://127.0.0.1:9\n"} {
		t.Run("HC-1/launcher-listening-line-names-"+strings.TrimPrefix(strings.Fields(want)[0], "health="), func(t *testing.T) {
			var logs testkit.LogBuffer
			cfg := childRun(t, "exit", []string{"0"})
			cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			cfg.Proxy = func(int) (proxy.Config, []string, error) {
				pc := proxy.Config{Candidates: []candidate.Candidate{candidate.Direct}}
				if raw != "" {
					u, err := url.Parse(raw)
					if err != nil {
						return pc, nil, err
					}
					pc.HealthURL = u
				}
				return pc, nil, nil
			}
			if status, err := Run(context.Background(), cfg); err != nil || status != 0 {
				t.Fatalf("status %d err %v", status, err)
			}
			out := logs.String()
			var line string
			for _, l := range strings.SplitAfter(out, "\n") {
				if strings.Contains(l, `msg="proxy listening"`) {
					line = l
				}
			}
			if !strings.Contains(line, want) || !strings.Contains(line, "candidates=1") || strings.Contains(out, "some/path") || strings.Contains(out, "tok=x") {
				t.Fatalf("want %q and candidates=1 on the proxy listening line, no path:\n%s", want, out)
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
