//go:build unix

package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/app/cli/complete"
)

// The bash completion tests run bash with sh scripts standing in for the programs: Unix only
// (.ci/wine-tests runs the rest of the package's tests on Windows).

func TestBashCompletion(t *testing.T) {
	t.Run("LIS-5/bash-offers-every-command-and-flag", func(t *testing.T) {
		bin := completionBin(t)
		// COMP_WORDS as bash splits the line; an empty last word when it
		// ends in a space.
		checkShell(t, func(line string) []string { return bashLine(t, bin, line) })
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

// valueLines are command lines (ending in the word being completed, after
// a space for none) and the values every shell must offer there; CFG is
// replaced by a configuration file's path (SPEC LIS-5).
var valueLines = []struct{ line, want string }{
	{"dual-proxy --log-level ", "debug error info warn"},
	{"dual-proxy run --log-format ", "json text"},
	{"claude-dual-proxy --log-level w", "warn"},
	{"dual-proxy help ", "completion demo man pool run settings status"},
	{"dual-proxy run --config CFG --pool ", "night work"},
	{"claude-dual-proxy --config CFG --pool w", "work"},
	{"dual-proxy pool test --config CFG ", "night work"},
	{"dual-proxy pool test --config CFG work ", "flash pro"},
}

// checkValues completes each of valueLines with complete.
func checkValues(t *testing.T, complete func(line string) []string) {
	cfg := writeConfig(t, testPoolConfig)
	for _, l := range valueLines {
		line := strings.ReplaceAll(l.line, "CFG", cfg)
		if got := strings.Join(complete(line), " "); got != l.want {
			t.Errorf("%q completes to %q, want %q", line, got, l.want)
		}
	}
}

// bashLine completes line in bash with the test binary standing in for
// both programs: the words it offers, sorted.
func bashLine(t *testing.T, bin, line string) []string {
	words := strings.Fields(line)
	if strings.HasSuffix(line, " ") {
		words = append(words, "''")
	}
	sh := complete.Bash + "\nCOMP_WORDS=(" + strings.Join(words, " ") + ")\nCOMP_CWORD=$((${#COMP_WORDS[@]}-1))\n" +
		"_dual_proxy_complete\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
	return shellWords(t, bin, "bash", "--norc", "--noprofile", "-c", sh)
}

func TestBashCompletionValues(t *testing.T) {
	t.Run("LIS-5/bash-offers-flag-and-argument-values", func(t *testing.T) {
		if _, err := exec.LookPath("bash"); err != nil {
			t.Skip("bash not installed")
		}
		bin := completionBin(t)
		checkValues(t, func(line string) []string { return bashLine(t, bin, line) })
	})
}

// completionBin is a directory holding dual-proxy and claude-dual-proxy:
// the test binary standing in for each (see TestMain).
func completionBin(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	for _, prog := range []string{"dual-proxy", "claude-dual-proxy"} {
		script := "#!/bin/sh\nDUAL_PROXY_TEST_MAIN=" + prog + " exec " + self + " \"$@\"\n"
		if err := os.WriteFile(filepath.Join(bin, prog), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return bin
}

// shellWords runs a shell script in an empty directory with bin first on
// PATH and returns its output split into sorted words ("--flag\tdescription"
// lines keep their first field).
func shellWords(t *testing.T, bin string, argv ...string) []string {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = t.TempDir() // no file names among the answers
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", argv[0], err, out)
	}
	var words []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		for _, w := range strings.Fields(l) {
			words = append(words, w)
			if strings.Contains(l, "\t") {
				break
			}
		}
	}
	sort.Strings(words)
	return words
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
	sh := complete.Bash + "\nCOMP_WORDS=(" + strings.Join(words, " ") + ")\nCOMP_CWORD=" +
		strconv.Itoa(len(words)-1) + "\n_dual_proxy_complete\necho \"${COMPREPLY[*]}\"\n"
	cmd := exec.Command(bash, "--norc", "--noprofile", "-c", sh)
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}
