package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/dual-proxy/dual-proxy/internal/app/registry"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
	"github.com/dual-proxy/dual-proxy/pool"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// poolApp runs a dual-proxy app holding only poolCommand (DualProxy holds
// it among the other commands).
func poolApp(args []string, sio IO) int {
	app := &cli.App{Name: "dual-proxy", Writer: sio.Stdout, ErrWriter: sio.Stderr, Commands: []*cli.Command{poolCommand(sio)}}
	return runApp(app, append([]string{"dual-proxy"}, args...), sio)
}

// poolInstance serves a pool "p" (token "tok") over one Anthropic-style
// upstream that answers a short stream, or 529 when overloaded is true.
func poolInstance(t *testing.T, overloaded bool) string {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if overloaded {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(529)
			fmt.Fprint(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range []string{
			`event: message_start` + "\n" + `data: {"type":"message_start","message":{"id":"m","content":[],"usage":{"input_tokens":3}}}`,
			`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}}`,
			`event: message_stop` + "\n" + `data: {"type":"message_stop"}`,
		} {
			fmt.Fprint(w, ev+"\n\n")
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(up.Close)
	cfg, err := config.ParseConfig([]byte(fmt.Sprintf("channels:\n  up: {api: anthropic, base_url: %q, api_key: sk-SECRET-1}\npools:\n  p: {members: [up]}\n", up.URL)), nil)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	srv := httptest.NewServer(pool.New(cfg, pool.Options{Token: "tok", Transport: tr}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func TestPoolTestCommand(t *testing.T) {
	t.Run("POOL-14/pool-test-prints-member-ttft-result", func(t *testing.T) {
		addr := poolInstance(t, false)
		out, errOut, status := runCmd(t, poolApp, nil, "pool", "test", "p", "m", "--addr", addr, "--token", "tok")
		if status != 0 || !strings.Contains(out, "result    ok") || !strings.Contains(out, "member    up") || !strings.Contains(out, "attempts  1") {
			t.Fatalf("status %d out %q err %q", status, out, errOut)
		}
		if !strings.Contains(out, "ttft") || strings.Contains(out, "ttft      -") {
			t.Fatalf("no ttft: %q", out)
		}
	})
	t.Run("POOL-14/pool-test-json-and-flags-first", func(t *testing.T) {
		addr := poolInstance(t, false)
		out, _, status := runCmd(t, poolApp, nil, "pool", "test", "--json", "--addr="+addr, "--token=tok", "p", "m")
		var res pool.TestResult
		if status != 0 || json.Unmarshal([]byte(out), &res) != nil || res.Member != "up" || res.Result != "ok" {
			t.Fatalf("status %d out %q", status, out)
		}
	})
	t.Run("POOL-14/pool-test-failure-exits-1-with-class", func(t *testing.T) {
		addr := poolInstance(t, true)
		out, _, status := runCmd(t, poolApp, nil, "pool", "test", "p", "m", "--addr", addr, "--token", "tok")
		if status != 1 || !strings.Contains(out, "failed (server)") || !strings.Contains(out, "up: server 529: Overloaded") || strings.Contains(out, "SECRET") {
			t.Fatalf("status %d out %q", status, out)
		}
	})
	t.Run("POOL-20/pool-test-without-token-exits-1-naming-401", func(t *testing.T) {
		addr := poolInstance(t, false)
		_, errOut, status := runCmd(t, poolApp, nil, "pool", "test", "p", "m", "--addr", addr)
		if status != 1 || !strings.Contains(errOut, "401 missing or wrong pool token") {
			t.Fatalf("status %d err %q", status, errOut)
		}
	})
	t.Run("LIS-5/pool-test-usage-errors-exit-2", func(t *testing.T) {
		for _, args := range [][]string{{"pool", "test", ""}, {"pool", "test", "p", "m", "extra"}, {"pool", "test", "p", "m", "--bogus"}, {"pool", "test", "p", "m", "--addr"}, {"pool", "test", "p", "m", "--addr", "nope"}} {
			if _, errOut, status := runCmd(t, poolApp, nil, args...); status != 2 || strings.Count(errOut, "\n") != 1 {
				t.Errorf("%v: status %d err %q", args, status, errOut)
			}
		}
	})
	t.Run("POOL-14/pool-test-unreachable-exits-1", func(t *testing.T) {
		addr := poolInstance(t, false)
		_, errOut, status := runCmd(t, poolApp, nil, "pool", "test", "p", "m", "--addr", addr[:strings.LastIndex(addr, ":")]+":1")
		if status != 1 || !strings.Contains(errOut, "cannot reach") {
			t.Fatalf("status %d err %q", status, errOut)
		}
	})
}

// poolServer serves the pools of cfgYAML (token "tok") with no upstream.
func poolServer(t *testing.T, cfgYAML string) string {
	t.Helper()
	cfg, err := config.ParseConfig([]byte(cfgYAML), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(pool.New(cfg, pool.Options{Token: "tok"}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func TestPoolTestHints(t *testing.T) {
	const cfg = "channels:\n  a: {api: anthropic, base_url: 'http://127.0.0.1:1', api_key: sk-SECRET-1,\n      models: [{id: a-large}, {id: a-small}]}\n  b: {api: anthropic, base_url: 'http://127.0.0.1:1', api_key: sk-SECRET-2}\n" +
		"pools:\n  named: {members: [a, b], models: [{id: flash, targets: {a: a-small}}, {id: pro}]}\n  declared: {members: [a]}\n  open: {members: [b]}\n"
	addr := poolServer(t, cfg)
	t.Run("POOL-14/pool-test-without-model-lists-the-pools-models-and-exits-0", func(t *testing.T) {
		for pool, want := range map[string]string{
			"named":    `models of pool "named" on ` + addr + " (dual-proxy pool test named MODEL tests one):\n  flash\n  pro\n",
			"declared": `models of pool "declared" on ` + addr + " (dual-proxy pool test declared MODEL tests one):\n  a-large\n  a-small\n",
			"open":     `pool "open" on ` + addr + " lists no models (no models: in its config, none declared by its members), so any model id goes to the members as is: name one they serve, e.g. dual-proxy pool test open MODEL\n",
		} {
			out, errOut, status := runCmd(t, poolApp, nil, "pool", "test", pool, "--addr", addr)
			if status != 0 || out != want || errOut != "" {
				t.Errorf("%s: status %d out %q err %q", pool, status, out, errOut)
			}
		}
	})
	t.Run("LIS-5/pool-test-of-an-unknown-pool-exits-2-naming-the-pools", func(t *testing.T) {
		out, errOut, status := runCmd(t, poolApp, nil, "pool", "test", "nosuch", "--addr", addr)
		if want := addr + ` serves no pool "nosuch" (its pools: named, declared, open)`; status != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, want) || strings.Contains(errOut, "SECRET") {
			t.Errorf("status %d out %q err %q", status, out, errOut)
		}
	})
	t.Run("POOL-14/pool-test-cannot-list-without-an-instance-exits-1", func(t *testing.T) {
		_, errOut, status := runCmd(t, poolApp, []string{"XDG_RUNTIME_DIR=" + t.TempDir()}, "pool", "test", "named", "--addr", testworld.RefusedAddr(t))
		if status != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "so its models cannot be listed; start one") {
			t.Errorf("unreachable: status %d err %q", status, errOut)
		}
		_, errOut, status = runCmd(t, poolApp, []string{"XDG_RUNTIME_DIR=" + t.TempDir()}, "pool", "test")
		if status != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "no running instance serves a pool; start one") {
			t.Errorf("nothing running: status %d err %q", status, errOut)
		}
	})
	t.Run("POOL-14/pool-test-without-arguments-lists-the-pools-and-exits-0", func(t *testing.T) {
		out, errOut, status := runCmd(t, poolApp, nil, "pool", "test", "--addr", addr)
		want := "pools of the running instances (dual-proxy pool test POOL lists a pool's models):\n" +
			"  named     " + addr + "\n  declared  " + addr + "\n  open      " + addr + "\n"
		if status != 0 || out != want || errOut != "" {
			t.Errorf("status %d out %q err %q", status, out, errOut)
		}
		// From the registry (SPEC OPS-6), as a user without --addr.
		env := []string{"XDG_RUNTIME_DIR=" + t.TempDir()}
		reg, err := registry.Register(registryDir(env), registry.Entry{Program: "dual-proxy", Addr: addr, Pools: []string{"named", "open"}}, "tok")
		if err != nil {
			t.Fatal(err)
		}
		defer reg.Remove()
		out, _, status = runCmd(t, poolApp, env, "pool", "test")
		if status != 0 || !strings.Contains(out, "  named  "+addr+"\n  open   "+addr+"\n") {
			t.Errorf("registry: status %d out %q", status, out)
		}
	})
	// --json is a promise about stdout: the lists too are one JSON
	// document each, never text.
	t.Run("POOL-14/pool-test-json-lists-are-json", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"--json", "--addr", addr}, `{"pools":[{"pool":"named","instance":"` + addr + `"},{"pool":"declared","instance":"` + addr + `"},{"pool":"open","instance":"` + addr + `"}]}`},
			{[]string{"named", "--addr", addr, "--json"}, `{"pool":"named","instance":"` + addr + `","models":[{"id":"flash","display_name":"flash"},{"id":"pro","display_name":"pro"}]}`},
			{[]string{"--json", "open", "--addr", addr}, `{"pool":"open","instance":"` + addr + `","models":[]}`},
		} {
			out, errOut, status := runCmd(t, poolApp, nil, append([]string{"pool", "test"}, tc.args...)...)
			if status != 0 || errOut != "" || !json.Valid([]byte(out)) {
				t.Errorf("%v: status %d out %q err %q", tc.args, status, out, errOut)
				continue
			}
			var got, want any
			json.Unmarshal([]byte(out), &got)
			json.Unmarshal([]byte(tc.want), &want)
			if g, w := fmt.Sprint(got), fmt.Sprint(want); g != w {
				t.Errorf("%v: got %s\nwant %s", tc.args, out, tc.want)
			}
		}
		// From the registry, without --addr.
		env := []string{"XDG_RUNTIME_DIR=" + t.TempDir()}
		reg, err := registry.Register(registryDir(env), registry.Entry{Program: "dual-proxy", Addr: addr, Pools: []string{"open"}}, "tok")
		if err != nil {
			t.Fatal(err)
		}
		defer reg.Remove()
		out, _, status := runCmd(t, poolApp, env, "pool", "test", "--json")
		if want := `{"pools":[{"pool":"open","instance":"` + addr + `"}]}` + "\n"; status != 0 || out != want {
			t.Errorf("registry: status %d out %q, want %q", status, out, want)
		}
	})
	// A pool no instance serves is one line, not that and the standalone
	// default's dial error, exit 2 when instances run other pools (a pool
	// that does not exist) and 1 when none runs (not exit 1 with
	// "cannot reach an instance at 127.0.0.1:7898: dial tcp …").
	t.Run("POOL-14/pool-test-of-a-pool-no-instance-serves-is-one-line", func(t *testing.T) {
		defer func(a string) { standaloneAddr = a }(standaloneAddr)
		standaloneAddr = testworld.RefusedAddr(t)
		oneLine := func(t *testing.T, what, errOut string, status, code int, want string) {
			t.Helper()
			if status != code || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, want) ||
				strings.Contains(errOut, "dial") || strings.Contains(errOut, "cannot reach") {
				t.Errorf("%s: status %d (want %d) err %q, want one line with %q", what, status, code, errOut, want)
			}
		}
		// LOCALAPPDATA too: on Windows the registry is there (else in TEMP,
		// shared with the other tests' entries).
		isolated := func() []string { d := t.TempDir(); return []string{"XDG_RUNTIME_DIR=" + d, "LOCALAPPDATA=" + d} }
		nothing := isolated()
		_, errOut, status := runCmd(t, poolApp, nothing, "pool", "test", "nosuch", "m")
		oneLine(t, "nothing runs", errOut, status, 1, `pool "nosuch": no dual-proxy is running (looked at `+standaloneAddr+" and the instances registered in ")

		env := isolated()
		reg, err := registry.Register(registryDir(env), registry.Entry{Program: "dual-proxy", Addr: addr, Pools: []string{"named", "open"}}, "tok")
		if err != nil {
			t.Fatal(err)
		}
		defer reg.Remove()
		want := `no running instance serves pool "nosuch" (running: named on ` + addr + ", open on " + addr + "); dual-proxy pool test lists the pools"
		_, errOut, status = runCmd(t, poolApp, env, "pool", "test", "nosuch", "m")
		oneLine(t, "others run", errOut, status, 2, want)
		_, errOut, status = runCmd(t, poolApp, env, "pool", "test", "nosuch")
		oneLine(t, "others run, list", errOut, status, 2, want)

		// The standalone default answers without a registry entry: its
		// pools count, and one it serves is tested there without a note.
		standaloneAddr = addr
		_, errOut, status = runCmd(t, poolApp, nothing, "pool", "test", "nosuch", "m")
		oneLine(t, "unregistered standalone", errOut, status, 2, `no running instance serves pool "nosuch" (running: named on `+addr+", declared on "+addr+", open on "+addr+")")
		_, errOut, status = runCmd(t, poolApp, nothing, "pool", "test", "named", "flash", "--token", "tok")
		if status != 1 || strings.Contains(errOut, "no running instance") || strings.Contains(errOut, "no pool") {
			t.Errorf("unregistered standalone serving the pool: status %d err %q", status, errOut)
		}

		_, errOut, status = runCmd(t, poolApp, nil, "pool", "test", "nosuch", "m", "--addr", addr, "--token", "tok")
		oneLine(t, "--addr", errOut, status, 2, addr+`: 404 no pool "nosuch" (pools: named, declared, open)`)
	})
	t.Run("POOL-20/pool-test-wrong-token-says-which-token-and-where-from", func(t *testing.T) {
		cases := []struct {
			env  []string
			args []string
			want string
		}{
			{nil, []string{"--token", "bad-flag-token"}, "the token from --token is not " + addr + "'s: it wants the token it was started with (dual-proxy: --pool-token / DUAL_PROXY_POOL_TOKEN; a launcher: its per-launch token"},
			{[]string{"DUAL_PROXY_POOL_TOKEN=bad-env-token"}, nil, "the token from DUAL_PROXY_POOL_TOKEN (environment) is not " + addr + "'s"},
			{nil, nil, "no token sent and " + addr + " is not registered in "},
		}
		for i, c := range cases {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				env := append([]string{"XDG_RUNTIME_DIR=" + t.TempDir()}, c.env...)
				for _, kv := range c.env {
					k, v, _ := strings.Cut(kv, "=")
					t.Setenv(k, v) // urfave/cli reads a flag's variable from the process environment
				}
				_, errOut, status := runCmd(t, poolApp, env, append([]string{"pool", "test", "named", "flash", "--addr", addr}, c.args...)...)
				if status != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "401 missing or wrong pool token") || !strings.Contains(errOut, c.want) {
					t.Errorf("%v %v: status %d err %q", c.env, c.args, status, errOut)
				}
				if strings.Contains(errOut, "bad-") {
					t.Errorf("a token in the message: %q", errOut)
				}
			})
		}
		// A registered instance whose token file is stale (it restarted
		// with another token): the registry's token is the one refused.
		runtime := t.TempDir()
		env := []string{"XDG_RUNTIME_DIR=" + runtime}
		reg, err := registry.Register(registryDir(env), registry.Entry{Program: "dual-proxy", Addr: addr, Pools: []string{"named"}}, "stale-token")
		if err != nil {
			t.Fatal(err)
		}
		defer reg.Remove()
		for args, want := range map[string]string{
			"":                   "the token registered for " + addr + " (pid ",
			"--token=bad-flag-2": "; leave out --token and DUAL_PROXY_POOL_TOKEN to use the one registered for it",
		} {
			argv := []string{"pool", "test", "named", "flash"}
			if args != "" {
				argv = append(argv, args)
			}
			_, errOut, status := runCmd(t, poolApp, env, argv...)
			if status != 1 || !strings.Contains(errOut, want) || strings.Contains(errOut, "stale-token") || strings.Contains(errOut, "bad-") {
				t.Errorf("%q: status %d err %q", args, status, errOut)
			}
		}
	})
}
