package launcher

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dual-proxy/dual-proxy/proxy"
	"github.com/dual-proxy/dual-proxy/proxy/path"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func directOnly(int) (proxy.Config, []string, error) {
	return proxy.Config{Candidates: []path.Candidate{path.Direct}}, nil, nil
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
		status, err := Run(context.Background(), Config{
			ListenHost: "127.0.0.1",
			Proxy:      directOnly,
			// The child proves the proxy is listening when it starts.
			Command: []string{"sh", "-c", `printf '%s' "$HTTP_PROXY"`},
			Env:     []string{"PATH=" + os.Getenv("PATH"), "HTTP_PROXY=http://user:pw@10.1.2.3:8080"},
			Stdout:  f,
			Stderr:  f,
			Ready: func(s *proxy.Server, port int) {
				bound = port
				c, err := net.Dial("tcp", "127.0.0.1:"+itoa(port))
				if err != nil {
					t.Errorf("proxy not listening before the child starts: %v", err)
					return
				}
				c.Close()
			},
		})
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
		status, err := Run(context.Background(), Config{ListenHost: "127.0.0.1", Proxy: directOnly, Command: []string{"sh", "-c", "exit 7"}, Env: []string{"PATH=" + os.Getenv("PATH")}})
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
		status, err := Run(context.Background(), Config{ListenHost: "127.0.0.1", ListenPort: port, Proxy: directOnly, Command: []string{"touch", marker}, Env: []string{"PATH=" + os.Getenv("PATH")}})
		if err == nil || status == 0 || !strings.Contains(err.Error(), "ss -tan") {
			t.Fatalf("status %d err %v", status, err)
		}
		if _, serr := os.Stat(marker); serr == nil {
			t.Fatal("child ran")
		}
	})
}

func itoa(n int) string { return strconv.Itoa(n) }
