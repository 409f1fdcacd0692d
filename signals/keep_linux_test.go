//go:build linux

package signals

import (
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"
)

// TestKeepHandlers: with Options.KeepHandlers a launcher that gets SIGINT after Run returned (a
// Ctrl-C during its own teardown) catches it and exits with the child's status; without it the
// handlers are removed on return, as before, and the SIGINT kills it (the control).
func TestKeepHandlers(t *testing.T) {
	t.Run("SIG-2/kept-handlers-catch-a-sigint-after-run", func(t *testing.T) {
		for _, keep := range []bool{true, false} {
			env := []string{"SIGNALS_TEST_LATE_SIGINT=1", "SIGNALS_TEST_NOPTY=1"}
			if keep {
				env = append(env, "SIGNALS_TEST_KEEP=1")
			}
			err := launcher(t, env, "true").Run()
			var ee *exec.ExitError
			switch {
			case keep && err != nil:
				t.Fatalf("KeepHandlers: launcher %v, want exit 0 (the late SIGINT caught)", err)
			case !keep && !(errors.As(err, &ee) && ee.ProcessState.Sys().(syscall.WaitStatus).Signal() == syscall.SIGINT):
				t.Fatalf("without KeepHandlers: launcher %v, want killed by the late SIGINT", err)
			}
		}
	})
}

// BenchmarkStopHandlers is what KeepHandlers saves a launcher at the end of Run: removing the
// handlers of the eleven signals Run watches (one round trip to the runtime's signal-mask thread
// each).
func BenchmarkStopHandlers(b *testing.B) {
	watched := append(append([]os.Signal{}, forwardedSignals...), controlSignals...)
	for b.Loop() {
		b.StopTimer()
		ch := make(chan os.Signal, 64)
		signal.Notify(ch, watched...)
		b.StartTimer()
		signal.Stop(ch)
	}
}
