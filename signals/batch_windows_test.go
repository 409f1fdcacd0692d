package signals

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// batchArgs are arguments that cmd.exe would split, redirect, expand or strip, each of which
// must reach the program a .cmd file runs unchanged (SPEC PLAT-3).
var batchArgs = []string{
	"-p", "x&echo INJECTED", "x&echo_INJECTED", "a|b", "<in", ">out", "2>&1", "^caret^", "!PATH!", "!",
	"two words", "", " ", "a\tb", `trailing\`, `C:\dir with space\`, "(paren)", "a;b,c=d", "ü€ 漢字", "*?",
	"--flag=v&w", `back\slash`,
}

// quoteArgs are the arguments a plain .cmd file cannot get unchanged (a " or a %, a line
// break); an npm shim's node.exe gets them exact.
var quoteArgs = []string{
	"100%PATH%", "%PATH%", "%", "%%", "%~dp0", `say "hi"`, `"`, `""`, `x" & echo INJECTED & "`, `"&"`,
	`back\"slash`, "line one\nline two", "cr\r\nlf",
}

// batchDir makes a directory with a space and an & in its name holding a .cmd file name with
// body and a copy of the test binary as exe; it returns the .cmd file's path.
func batchDir(t *testing.T, name, body, exe string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "npm global & more")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := copyFile(self, filepath.Join(dir, exe)); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, name)
}

// runArgs runs script with args through Run and returns what the child received; started is
// false when the child wrote nothing.
func runArgs(t *testing.T, script string, args []string) (got []string, started bool, status int, err error) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "args.json")
	cmd := exec.Command(script, args...)
	cmd.Env = append(os.Environ(), argsOutEnv+"="+out)
	status, err = Run(context.Background(), cmd, Options{})
	data, rerr := os.ReadFile(out)
	if rerr != nil {
		return nil, false, status, err
	}
	if jerr := json.Unmarshal(data, &got); jerr != nil {
		t.Fatal(jerr)
	}
	return got, true, status, err
}

func TestBatchFileArguments(t *testing.T) {
	every := append(append([]string{}, batchArgs...), quoteArgs...)
	for _, shim := range []struct{ name, body string }{{"npm7", npm7Shim}, {"npm6", npm6Shim}} {
		t.Run("PLAT-3/"+shim.name+"-shim-every-argument-reaches-node-byte-exact", func(t *testing.T) {
			script := batchDir(t, "claude.cmd", shim.body, "node.exe")
			cli := filepath.Join(filepath.Dir(script), `node_modules\@anthropic-ai\claude-code\cli.js`)
			for _, a := range every {
				got, _, status, err := runArgs(t, script, []string{a})
				if want := []string{cli, a}; err != nil || status != 0 || !slices.Equal(got, want) {
					t.Errorf("argument %q: got %q (status %d, %v), want %q", a, got, status, err, want)
				}
			}
			got, _, status, err := runArgs(t, script, every)
			if want := append([]string{cli}, every...); err != nil || status != 0 || !slices.Equal(got, want) {
				t.Errorf("all at once: got %q (status %d, %v), want %q", got, status, err, want)
			}
		})
	}
	t.Run("PLAT-3/plain-cmd-file-metacharacters-arrive-byte-exact-through-cmd-exe", func(t *testing.T) {
		script := batchDir(t, "tool.cmd", plainBatch, "child.exe")
		for _, a := range batchArgs {
			got, _, status, err := runArgs(t, script, []string{a})
			if want := []string{a}; err != nil || status != 0 || !slices.Equal(got, want) {
				t.Errorf("argument %q: got %q (status %d, %v), want %q", a, got, status, err, want)
			}
		}
		got, _, status, err := runArgs(t, script, batchArgs)
		if err != nil || status != 0 || !slices.Equal(got, batchArgs) {
			t.Errorf("all at once: got %q (status %d, %v), want %q", got, status, err, batchArgs)
		}
	})
	t.Run("PLAT-3/plain-cmd-file-quote-percent-line-break-refused-nothing-started", func(t *testing.T) {
		script := batchDir(t, "tool.cmd", plainBatch, "child.exe")
		for _, a := range quoteArgs {
			_, started, status, err := runArgs(t, script, []string{"-p", a})
			var be *BatchArgError
			if started || !errors.As(err, &be) || be.Index != 2 || status != StatusCannotExecute ||
				!strings.Contains(err.Error(), "argument 2 cannot be passed to tool.cmd") {
				t.Errorf("argument %q: started %v, status %d, %v; want a BatchArgError for argument 2, status 126, nothing started",
					a, started, status, err)
			}
		}
	})
}

// copyFile copies the file src to dst.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
