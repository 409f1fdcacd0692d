//go:build linux

package signals

import (
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
)

// TestPTYSelectInput runs PTY mode with macOS's way of waiting for terminal input (select(2)
// instead of poll(2)) in a real terminal on Linux: typed text and a typed Ctrl-C reach the child
// through the PTY, and the terminal is restored (SPEC SIG-1, PLAT-1).
func TestPTYSelectInput(t *testing.T) {
	t.Run("PLAT-1/SIG-1/darwin-select-input-typed-line-and-ctrl-c", func(t *testing.T) {
		p := startPane(t, `trap 'exit 3' INT
echo ready > "$D/ready"
IFS= read -r line; echo "got:$line" > "$D/got"
while :; do sleep 0.05; done`, "SIGNALS_TEST_SELECT=1")
		p.waitFile("ready")
		p.tmux("send-keys", "-t", "t", "-l", "typed-text")
		p.tmux("send-keys", "-t", "t", "Enter")
		testkit.WaitFor(t, 10*time.Second, "child read the typed line", func() bool { return readFile(p.file("got")) == "got:typed-text" })
		p.tmux("send-keys", "-t", "t", "C-c")
		if rc := p.status(); rc != 3 {
			t.Fatalf("rc %d, want 3 (child's SIGINT trap)", rc)
		}
		if before, after := readFile(p.file("before")), readFile(p.file("after")); before != after {
			t.Fatalf("terminal not restored: before %q, after %q", before, after)
		}
	})
}
