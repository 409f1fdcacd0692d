package cli

import (
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"

	"github.com/dual-proxy/dual-proxy/internal/app/cli/manpage"
)

var updateDocs = flag.Bool("update", false, "rewrite docs/*.1 from the command-line definitions")

// TestMain lets the test binary stand in for the programs (shell completion
// runs them): DUAL_PROXY_TEST_MAIN=dual-proxy|claude-dual-proxy; and for the
// launchers' children (testworld.Child). The standalone default status
// and pool test look at is a refused port, in this process and in every
// program it stands in for: the tests never find the user's own proxy on
// 7898 (a test run on a machine that runs dual-proxy all day).
func TestMain(m *testing.M) {
	testworld.ChildMain(nil)
	standaloneAddr = testworld.ProcessRefusedAddr()
	sio := IO{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Environ: os.Environ()}
	switch os.Getenv("DUAL_PROXY_TEST_MAIN") {
	case "dual-proxy":
		os.Exit(DualProxy(os.Args[1:], sio))
	case "claude-dual-proxy":
		os.Exit(Claude(os.Args[1:], sio))
	}
	os.Exit(m.Run())
}

// TestManPages keeps docs/dual-proxy.1 and docs/claude-dual-proxy.1 equal to
// the pages generated from the command-line definitions. After changing a
// flag: go test ./internal/app/cli -run TestManPages -update
func TestManPages(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the checked-in pages show the Linux defaults")
	}
	for _, prog := range []string{"dual-proxy", "claude-dual-proxy"} {
		t.Run("OPS-1/man-page-in-sync/"+prog, func(t *testing.T) {
			page, err := manpage.Page(prog, logHint, configHint)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{".TH " + prog + " 1", "--gateway", "XDG_STATE_HOME"} {
				if !strings.Contains(page, want) {
					t.Fatalf("man page lacks %q", want)
				}
			}
			path := filepath.Join("..", "..", "..", "docs", prog+".1")
			if *updateDocs {
				if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := os.ReadFile(path)
			if err != nil || string(got) != page {
				t.Fatalf("%s is stale: run `go test ./internal/app/cli -run TestManPages -update` (err %v)", path, err)
			}
		})
	}
	t.Run("OPS-1/man-command-prints-page", func(t *testing.T) {
		out, _, status := runCmd(t, DualProxy, nil, "man", "claude-dual-proxy")
		if status != 0 || !strings.HasPrefix(out, ".nh\n.TH claude-dual-proxy 1") {
			t.Fatalf("status %d %.80q", status, out)
		}
	})
	t.Run("OPS-1/man-command-equals-checked-in-page-whatever-the-environment", func(t *testing.T) {
		if runtime.GOOS != "linux" {
			t.Skip("the checked-in pages show the Linux defaults")
		}
		env := []string{"HOME=/home/someone", "XDG_STATE_HOME=/home/someone/state", "PATH=" + os.Getenv("PATH")}
		for _, prog := range []string{"dual-proxy", "claude-dual-proxy"} {
			out, _, status := runCmdEnv(t, DualProxy, env, "man", prog)
			want, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", prog+".1"))
			if err != nil || status != 0 || out != string(want) {
				t.Fatalf("%s: status %d, err %v; the printed page differs from docs/%s.1 (user paths leaked: %v)",
					prog, status, err, prog, strings.Contains(out, "/home/someone"))
			}
		}
	})
}

func TestHelpCommand(t *testing.T) {
	t.Run("LIS-5/help-subcommand", func(t *testing.T) {
		out, _, status := runCmd(t, DualProxy, nil, "help", "status")
		if status != 0 || !strings.Contains(out, "dual-proxy status [--addr HOST:PORT]") {
			t.Fatalf("status %d:\n%s", status, out)
		}
	})
	t.Run("LIS-5/help-lists-completion-and-env", func(t *testing.T) {
		out, _, status := runCmd(t, DualProxy, nil, "help")
		if status != 0 || !strings.Contains(out, "completion") || !strings.Contains(out, envHint("LOG_LEVEL")) {
			t.Fatalf("status %d:\n%s", status, out)
		}
	})
}

func TestCompletion(t *testing.T) {
	t.Run("LIS-5/fish-script-from-definitions", func(t *testing.T) {
		out, _, status := runCmd(t, DualProxy, nil, "completion", "fish")
		for _, want := range []string{"complete -c dual-proxy", "complete -c claude-dual-proxy", "-l gateway"} {
			if status != 0 || !strings.Contains(out, want) {
				t.Fatalf("status %d: no %q in\n%.400s", status, want, out)
			}
		}
	})
	t.Run("LIS-5/unknown-shell", func(t *testing.T) {
		_, errOut, status := runCmd(t, DualProxy, nil, "completion", "tcsh")
		if status != 2 || errOut != "dual-proxy completion: want bash, zsh, fish or powershell, got \"tcsh\"\n" {
			t.Fatalf("status %d %q", status, errOut)
		}
	})
	t.Run("LIS-5/no-shell-named", func(t *testing.T) {
		_, errOut, status := runCmd(t, DualProxy, nil, "completion")
		if status != 2 || errOut != "dual-proxy completion: name your shell: bash, zsh, fish or powershell (e.g. source <(dual-proxy completion bash))\n" {
			t.Fatalf("status %d %q", status, errOut)
		}
	})
}
