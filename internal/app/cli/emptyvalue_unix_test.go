//go:build unix

package cli

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
)

// TestEmptyValueOnATerminal: `settings get KEY` of an empty value prints
// "(none)" (or "(not set)") to a terminal, as the table does, through the
// escaping writer every command's output goes through (runApp wraps
// stdout in termSafe), and nothing to a pipe (SPEC OPS-7).
func TestEmptyValueOnATerminal(t *testing.T) {
	t.Run("OPS-7/settings-get-empty-value-prints-none-on-a-terminal", func(t *testing.T) {
		ptm, tty, err := pty.Open()
		if err != nil {
			t.Skipf("no pseudo-terminal: %v", err)
		}
		defer ptm.Close()
		defer tty.Close()
		got := make(chan string, 1)
		go func() {
			var b bytes.Buffer
			buf := make([]byte, 256)
			for !strings.Contains(b.String(), "\n") {
				n, err := ptm.Read(buf)
				b.Write(buf[:n])
				if err != nil {
					break
				}
			}
			got <- b.String()
		}()
		for _, v := range []any{"", []string{}} {
			if err := printValue(termSafe(tty), v); err != nil {
				t.Fatal(err)
			}
		}
		if err := printValue(termSafe(tty), nil); err != nil {
			t.Fatal(err)
		}
		select {
		case s := <-got:
			if !strings.HasPrefix(s, "(none)") {
				t.Fatalf("terminal got %q, want (none)", s)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("nothing printed to the terminal")
		}
	})
	t.Run("OPS-7/settings-get-empty-value-prints-nothing-to-a-pipe", func(t *testing.T) {
		var b bytes.Buffer
		if err := printValue(termSafe(io.Writer(&b)), ""); err != nil || b.Len() != 0 {
			t.Fatalf("pipe got %q (%v), want nothing", b.String(), err)
		}
	})
}
