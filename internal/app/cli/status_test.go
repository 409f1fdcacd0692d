package cli

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dual-proxy/dual-proxy/internal/app/registry"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
	"github.com/dual-proxy/dual-proxy/proxy"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/route"
	"github.com/dual-proxy/dual-proxy/proxy/statusdoc"
)

// statusWorld runs an in-process proxy (refused gateway, direct) with its
// status endpoints mounted, sends one plain request through it, and returns
// its address and the refused gateway's key.
func statusWorld(t *testing.T) (addr, deadKey string) {
	t.Helper()
	origin := testworld.NewOrigin(t)
	dead, err := route.ParseGateway("http://u:pw-NOT-SHOWN@"+testworld.RefusedAddr(t), "upstream-url")
	if err != nil {
		t.Fatal(err)
	}
	mux := proxy.NewMux()
	// The settings the status document shows are the builder's, by the
	// key table's names (internal/app/settings fills them for a real start).
	srv, err := proxy.New(proxy.Config{Candidates: []candidate.Candidate{dead, candidate.Direct}, Cooldown: 30 * time.Second, Handler: mux,
		Settings: map[string]any{"cooldown-ms": 30000}})
	if err != nil {
		t.Fatal(err)
	}
	mux.Attach(srv)
	addr = testkit.Serve(t, srv)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "GET "+origin.URL+"/p?q=1 HTTP/1.1\r\nHost: "+origin.Addr+"\r\nConnection: close\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("request through the proxy: %v %v", resp, err)
	}
	resp.Body.Close()
	return addr, dead.Key()
}

func TestStatusCommand(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t, goleak.IgnoreCurrent()) })
	addr, deadKey := statusWorld(t)

	t.Run("OPS-2/status-leads-with-a-verdict", func(t *testing.T) {
		out, _, status := runCmd(t, DualProxy, nil, "status", "--addr", addr)
		first, _, _ := strings.Cut(out, "\n")
		re := `^serving via direct \(last request \d\d:\d\d:\d\d\) · 1 of 2 paths proven · http://u:\*\*\*@` + regexp.QuoteMeta(deadKey) +
			` failing since \d\d:\d\d:\d\d: cannot connect to the gateway \(gateway-connect\)$`
		if status != 0 || !regexp.MustCompile(re).MatchString(first) {
			t.Fatalf("first line %q, want %s", first, re)
		}
	})
	t.Run("OPS-2/status-prints-aligned-tables", func(t *testing.T) {
		out, errOut, status := runCmd(t, DualProxy, nil, "status", "--addr", addr)
		if status != 0 {
			t.Fatalf("status %d stderr %q", status, errOut)
		}
		for _, want := range []string{"listening", addr, "CANDIDATES (default order)", "KIND", "http://u:***@" + deadKey, "direct",
			"PER-HOST CACHE", "RECENT DECISIONS", "gateway-connect", "30.0 s", "127.0.0.1"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "pw-NOT-SHOWN") || strings.Contains(out, "/p?q=1") {
			t.Fatalf("output shows a secret or a path:\n%s", out)
		}
		// The STATE column lines up: "cooling" and "hot" start where the
		// header's STATE starts.
		lines := strings.Split(out, "\n")
		var header int = -1
		for i, l := range lines {
			if strings.HasPrefix(l, "#") && strings.Contains(l, "STATE") {
				header = i
				break
			}
		}
		if header < 0 || header+2 >= len(lines) {
			t.Fatalf("no candidate table:\n%s", out)
		}
		col := strings.Index(lines[header], "STATE")
		if got := lines[header+1][col:]; !strings.HasPrefix(got, "cooling") {
			t.Errorf("row 1 at STATE column: %q\n%s", got, out)
		}
		if got := lines[header+2][col:]; !strings.HasPrefix(got, "hot") {
			t.Errorf("row 2 at STATE column: %q\n%s", got, out)
		}
	})
	t.Run("OPS-2/status-json", func(t *testing.T) {
		out, _, status := runCmd(t, DualProxy, nil, "status", "--addr", addr, "--json")
		var st statusdoc.Status
		if status != 0 || json.Unmarshal([]byte(out), &st) != nil || len(st.Candidates) != 2 || st.Candidates[0].State != statusdoc.StateCooling {
			t.Fatalf("status %d:\n%s", status, out)
		}
	})
	t.Run("OPS-2/closed-port-exits-1-with-one-line", func(t *testing.T) {
		closed := testworld.RefusedAddr(t)
		out, errOut, status := runCmd(t, DualProxy, nil, "status", "--addr", closed)
		if status != 1 || out != "" {
			t.Fatalf("status %d stdout %q", status, out)
		}
		if strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "dual-proxy status: cannot reach a proxy at "+closed) || !strings.Contains(errOut, "refused") {
			t.Fatalf("stderr %q", errOut)
		}
	})
	t.Run("OPS-2/closed-port-says-how-to-find-the-running-ones", func(t *testing.T) {
		// The line names the refused dial and what to do next.
		closed := testworld.RefusedAddr(t)
		_, errOut, status := runCmd(t, DualProxy, nil, "status", "--addr", closed)
		if want := "without --addr, dual-proxy status lists the running instances"; status != 1 || !strings.Contains(errOut, want) {
			t.Fatalf("status %d, stderr %q; want 1 and %q", status, errOut, want)
		}
	})
	t.Run("OPS-2/not-a-dual-proxy-exits-1", func(t *testing.T) {
		other := httptest.NewServer(http.NotFoundHandler())
		defer other.Close()
		_, errOut, status := runCmd(t, DualProxy, nil, "status", "--addr", other.Listener.Addr().String())
		if status != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "404") {
			t.Fatalf("status %d stderr %q", status, errOut)
		}
	})
	t.Run("LIS-5/bad-addr-exits-2-naming-the-flag", func(t *testing.T) {
		for _, a := range []string{"nonsense", "127.0.0.1:99999", "0"} {
			_, errOut, status := runCmd(t, DualProxy, nil, "status", "--addr", a)
			if status != 2 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "--addr") {
				t.Errorf("--addr %q: status %d stderr %q", a, status, errOut)
			}
		}
	})
}

// TestAddrSourceInHints: an address from DUAL_PROXY_ADDR is named as the
// environment's in status's and pool test's errors, and the hint says to
// unset it; leaving out --addr did not help the user who never typed it
// (SPEC OPS-2, LIS-5: "without --addr, dual-proxy status lists the
// running instances" does not help then).
func TestAddrSourceInHints(t *testing.T) {
	refused := testworld.RefusedAddr(t)
	for _, tc := range []struct {
		name     string
		env      string
		args     []string
		code     int
		want     string
		unwanted string
	}{
		{"OPS-2/status-addr-from-environment", refused, []string{"status"}, 1,
			"; the address is DUAL_PROXY_ADDR's, set in the environment; with it unset (and no --addr), dual-proxy status lists the running instances", "without --addr,"},
		{"OPS-2/status-addr-typed-over-environment", "127.0.0.1:2", []string{"status", "--addr", refused}, 1,
			"; without --addr, dual-proxy status lists the running instances", "set in the environment"},
		{"OPS-2/status-addr-typed", "", []string{"status", "--addr", refused}, 1,
			"; without --addr, dual-proxy status lists the running instances", "set in the environment"},
		{"LIS-5/status-bad-addr-from-environment", "foo", []string{"status"}, 2,
			`dual-proxy status: environment variable DUAL_PROXY_ADDR (--addr): want HOST:PORT, got "foo"`, ""},
		{"LIS-5/pool-test-bad-addr-from-environment", "foo", []string{"pool", "test", "p", "m"}, 2,
			`dual-proxy pool test: environment variable DUAL_PROXY_ADDR (--addr): want HOST:PORT, got "foo"`, ""},
		{"POOL-14/pool-test-addr-from-environment", refused, []string{"pool", "test", "p", "m"}, 1,
			"; the address is DUAL_PROXY_ADDR's, set in the environment; with it unset (and no --addr), pool test finds the instance serving the pool", ""},
		{"POOL-14/pool-test-list-addr-from-environment", refused, []string{"pool", "test"}, 1,
			"; the address is DUAL_PROXY_ADDR's, set in the environment; with it unset (and no --addr), pool test lists the pools of every running instance", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := []string{"XDG_RUNTIME_DIR=" + t.TempDir()}
			if tc.env != "" {
				env = append(env, "DUAL_PROXY_ADDR="+tc.env)
				t.Setenv("DUAL_PROXY_ADDR", tc.env) // urfave/cli reads a flag's variable from the process environment
			}
			_, errOut, status := runCmd(t, DualProxy, env, tc.args...)
			if status != tc.code || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, tc.want) || tc.unwanted != "" && strings.Contains(errOut, tc.unwanted) {
				t.Fatalf("status %d (want %d) err %q, want %q", status, tc.code, errOut, tc.want)
			}
		})
	}
}

// TestStatusJSONHelp: status --help says what --json prints in both forms,
// and it is so: one document with --addr, an array of them without (SPEC
// OPS-2; ux review: the help said "the raw JSON document" for both).
func TestStatusJSONHelp(t *testing.T) {
	addr, _ := statusWorld(t)
	t.Run("OPS-2/status-json-help-names-the-array", func(t *testing.T) {
		out, _, status := runCmd(t, DualProxy, nil, "status", "--help")
		if status != 0 || !strings.Contains(out, "--json             print the JSON status document, with an \"instance\" member (pid, command, pools, log file) when the registry lists it (without --addr: a JSON array, one per instance)") {
			t.Fatalf("status %d:\n%s", status, out)
		}
		env := []string{"XDG_RUNTIME_DIR=" + t.TempDir()}
		reg, err := registry.Register(registryDir(env), registry.Entry{Program: "dual-proxy", Addr: addr}, "")
		if err != nil {
			t.Fatal(err)
		}
		defer reg.Remove()
		var all []statusdoc.Status
		if out, errOut, status := runCmd(t, DualProxy, env, "status", "--json"); status != 0 || json.Unmarshal([]byte(out), &all) != nil || len(all) == 0 {
			t.Fatalf("without --addr: status %d err %q, not a JSON array:\n%s", status, errOut, out)
		}
		var one statusdoc.Status
		if out, errOut, status := runCmd(t, DualProxy, env, "status", "--json", "--addr", addr); status != 0 || json.Unmarshal([]byte(out), &one) != nil || len(one.Candidates) == 0 {
			t.Fatalf("--addr: status %d err %q, not one document:\n%s", status, errOut, out)
		}
	})
}

// TestJSONOutputIsOneDocument: what --json prints is one valid JSON
// document, whatever the instance at the address answered, through the
// control-byte escaping of every output (SPEC OPS-2, POOL-14): a listener
// that answers 200 with something else than JSON (a web server on the
// port), a document whose strings carry invalid UTF-8 (which the escaping
// writer would turn into \xHH, not a JSON escape), and the listing of
// every instance with one such listener registered among real ones.
func TestJSONOutputIsOneDocument(t *testing.T) {
	hostile := func(t *testing.T, body string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(body))
		}))
		t.Cleanup(srv.Close)
		return strings.TrimPrefix(srv.URL, "http://")
	}
	env := func(t *testing.T) []string {
		d := t.TempDir()
		return []string{"XDG_RUNTIME_DIR=" + filepath.Join(d, "run"), "XDG_CONFIG_HOME=" + filepath.Join(d, "cfg"), "XDG_STATE_HOME=" + filepath.Join(d, "state"), "LOCALAPPDATA=" + filepath.Join(d, "local")}
	}

	t.Run("OPS-2/status-json-of-a-non-json-answer-is-an-error", func(t *testing.T) {
		addr := hostile(t, "<html><body>a web server</body></html>\n")
		out, errOut, status := runCmd(t, DualProxy, env(t), "status", "--addr", addr, "--json")
		if status != 1 || out != "" || !strings.Contains(errOut, "did not answer a dual-proxy status document") {
			t.Fatalf("status %d, stdout %q, stderr %q", status, out, errOut)
		}
	})
	t.Run("OPS-2/status-json-with-invalid-utf8-is-valid-json", func(t *testing.T) {
		addr := hostile(t, "{\"candidates\":[],\"note\":\"a\xffb\xc3\"}")
		out, errOut, status := runCmd(t, DualProxy, env(t), "status", "--addr", addr, "--json")
		var doc map[string]any
		if status != 0 || !json.Valid([]byte(out)) || json.Unmarshal([]byte(out), &doc) != nil || doc["note"] != "a\ufffdb\ufffd" {
			t.Fatalf("status %d, stdout %q, stderr %q", status, out, errOut)
		}
	})
	t.Run("OPS-2/status-json-of-every-instance-skips-one-without-a-document", func(t *testing.T) {
		if os.Getppid() <= 0 || os.Getppid() == os.Getpid() {
			// Wine 8 reports parent pid 0, and an entry's PID 0 means this
			// process: both entries would be one registry file.
			t.Skip("needs a second live pid of this user: the parent pid is unknown here (Wine reports 0)")
		}
		e := env(t)
		mux := proxy.NewMux()
		real, err := proxy.New(proxy.Config{Candidates: []candidate.Candidate{candidate.Direct}, Cooldown: 30 * time.Second, Handler: mux})
		if err != nil {
			t.Fatal(err)
		}
		mux.Attach(real)
		raddr := testkit.Serve(t, real)
		haddr := hostile(t, "<html>not a status</html>")
		// Two live pids of this user: this process and its parent.
		for _, ent := range []registry.Entry{{Program: "dual-proxy", Addr: raddr}, {Program: "dual-proxy", Addr: haddr, PID: os.Getppid()}} {
			reg, err := registry.Register(registryDir(e), ent, "")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { reg.Remove() })
		}
		out, errOut, status := runCmd(t, DualProxy, e, "status", "--json")
		var docs []map[string]any
		if status != 0 || json.Unmarshal([]byte(out), &docs) != nil {
			t.Fatalf("status %d, stdout %q, stderr %q", status, out, errOut)
		}
		n := 0
		for _, d := range docs {
			if _, ok := d["candidates"]; ok {
				n++
			}
		}
		if n != len(docs) || n < 1 {
			t.Fatalf("documents %v: want only status documents, the registered proxy's among them", docs)
		}
	})
	t.Run("POOL-14/pool-test-json-with-invalid-utf8-is-valid-json", func(t *testing.T) {
		addr := hostile(t, "{\"result\":\"ok\",\"model\":\"m\xff\",\"answer\":\"x\xe2\x82\"}")
		out, errOut, status := runCmd(t, poolApp, env(t), "pool", "test", "p", "m", "--addr", addr, "--token", "tok", "--json")
		var doc map[string]any
		if status != 0 || !json.Valid([]byte(out)) || json.Unmarshal([]byte(out), &doc) != nil || doc["model"] != "m\ufffd" {
			t.Fatalf("status %d, stdout %q, stderr %q", status, out, errOut)
		}
	})
}

// TestStatusHelpNamesEveryRegisteredInstance: status --help says that
// without --addr it lists every registered instance, a standalone proxy
// on another port as well as the launchers, and it does (SPEC OPS-2).
func TestStatusHelpNamesEveryRegisteredInstance(t *testing.T) {
	addr, _ := statusWorld(t)
	t.Run("OPS-2/status-without-addr-help-and-listing-name-every-registered-instance", func(t *testing.T) {
		out, _, status := runCmd(t, DualProxy, nil, "status", "--help")
		if status != 0 || !strings.Contains(out, "Without --addr: every running instance registered in $XDG_RUNTIME_DIR/dual-proxy (standalone") {
			t.Fatalf("status %d:\n%s", status, out)
		}
		env := []string{"XDG_RUNTIME_DIR=" + t.TempDir()}
		reg, err := registry.Register(registryDir(env), registry.Entry{Program: "dual-proxy", Addr: addr}, "")
		if err != nil {
			t.Fatal(err)
		}
		defer reg.Remove()
		if out, errOut, status := runCmd(t, DualProxy, env, "status", "--decisions", "0"); status != 0 || !strings.Contains(out, "== dual-proxy on "+addr) {
			t.Fatalf("status %d err %q: a registered standalone proxy is not listed:\n%s", status, errOut, out)
		}
	})
}
