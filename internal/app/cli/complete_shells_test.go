//go:build shells && linux

package cli

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/app/cli/complete"
)

// The completion scripts of the shells a plain test machine may lack, run
// by the real shells against the command tree (`go test -tags shells`;
// .ci/run installs fish and zsh).

func TestCompletionShells(t *testing.T) {
	t.Run("LIS-5/fish-offers-every-command-and-flag", func(t *testing.T) {
		if _, err := exec.LookPath("fish"); err != nil {
			t.Skip("fish not installed")
		}
		bin := completionBin(t)
		script, err := completionScript("fish", IO{})
		if err != nil {
			t.Fatal(err)
		}
		checkShell(t, func(line string) []string {
			return shellWords(t, bin, "fish", "--no-config", "-c", script+"\ncomplete -C "+fishQuote(line))
		})
		checkValues(t, func(line string) []string {
			return shellWords(t, bin, "fish", "--no-config", "-c", script+"\ncomplete -C "+fishQuote(line))
		})
		for line, want := range map[string]string{
			"dual-proxy pool test lp ":         "", // POOL given: nothing more to offer
			"dual-proxy run -- pool ":          "", // the child's words
			"dual-proxy --listen-port 1 pool ": "test",
			"dual-proxy completion bash ":      "",
		} {
			if got := strings.Join(shellWords(t, bin, "fish", "--no-config", "-c", script+"\ncomplete -C "+fishQuote(line)), " "); got != want {
				t.Errorf("%q completes to %q, want %q", line, got, want)
			}
		}
	})
	t.Run("LIS-5/zsh-offers-every-command-and-flag", func(t *testing.T) {
		if _, err := exec.LookPath("zsh"); err != nil {
			t.Skip("zsh not installed")
		}
		bin := completionBin(t)
		// compdef, _describe and _files stand in for the completion system:
		// _describe prints the candidates the script hands it that match the
		// word being completed, as the real one offers them.
		stubs := "compdef() { :; }\n_files() { :; }\n" +
			"_describe() { local c; for c in \"${(@P)2}\"; do [[ $c == ${words[-1]}* ]] && print -r -- $c; done; }\n"
		zshLine := func(line string) []string {
			words := strings.Fields(line)
			if strings.HasSuffix(line, " ") {
				words = append(words, "''")
			}
			return shellWords(t, bin, "zsh", "-f", "-c", stubs+complete.Zsh+"\nwords=("+strings.Join(words, " ")+")\n_dual_proxy_complete\ntrue\n")
		}
		checkShell(t, zshLine)
		checkValues(t, zshLine)
	})
}

// fishQuote is s as the fish script quotes it: one single-quoted word.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
