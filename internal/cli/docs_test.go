package cli

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

var updateDocs = flag.Bool("update", false, "rewrite docs/*.1 from the command-line definitions")

// TestMain lets the test binary stand in for the programs (shell completion
// runs them): DUAL_PROXY_TEST_MAIN=dual-proxy|claude-dual-proxy.
func TestMain(m *testing.M) {
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
// flag: go test ./internal/cli -run TestManPages -update
func TestManPages(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the checked-in pages show the Linux defaults")
	}
	for _, prog := range []string{"dual-proxy", "claude-dual-proxy"} {
		t.Run("OPS-1/man-page-in-sync/"+prog, func(t *testing.T) {
			page, err := manPage(prog, IO{})
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{".TH " + prog + " 1", "--gateway", "XDG_STATE_HOME"} {
				if !strings.Contains(page, want) {
					t.Fatalf("man page lacks %q", want)
				}
			}
			path := filepath.Join("..", "..", "docs", prog+".1")
			if *updateDocs {
				if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := os.ReadFile(path)
			if err != nil || string(got) != page {
				t.Fatalf("%s is stale: run `go test ./internal/cli -run TestManPages -update` (err %v)", path, err)
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
			want, err := os.ReadFile(filepath.Join("..", "..", "docs", prog+".1"))
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
		if status != 0 || !strings.Contains(out, "completion") || !strings.Contains(out, "$LOG_LEVEL") {
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
	for _, tc := range []struct{ name, line, want, not string }{
		{"commands", "dual-proxy st", "status", ""},
		{"flags", "dual-proxy run --gate", "--gateway", ""},
		{"launcher-flags", "claude-dual-proxy --pool-", "", "--pool-token"},
		{"launcher-flags-2", "claude-dual-proxy --comm", "--command", ""},
		{"after-dashdash-no-program-run", "claude-dual-proxy -- --he", "", "--help"},
	} {
		t.Run("LIS-5/bash-completes-"+tc.name, func(t *testing.T) {
			got := bashComplete(t, tc.line)
			if (tc.want != "" && !strings.Contains(" "+got+" ", " "+tc.want+" ")) || (tc.not != "" && strings.Contains(got, tc.not)) {
				t.Fatalf("%q completes to %q (want %q, not %q)", tc.line, got, tc.want, tc.not)
			}
		})
	}
}

// bashComplete sources the bash script and completes line (the last word is
// the one being typed) with the test binary standing in for both programs.
func bashComplete(t *testing.T, line string) string {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	bin := completionBin(t)
	words := strings.Fields(line)
	sh := bashCompletion + "\nCOMP_WORDS=(" + strings.Join(words, " ") + ")\nCOMP_CWORD=" +
		strconv.Itoa(len(words)-1) + "\n_dual_proxy_complete\necho \"${COMPREPLY[*]}\"\n"
	cmd := exec.Command(bash, "--norc", "--noprofile", "-c", sh)
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}
