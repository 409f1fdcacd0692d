//go:build unix

package upstream

import (
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testkit"
)

// TestQuietSeesEOF is Unix-only: the non-blocking MSG_PEEK sees a peer's FIN,
// Windows' FIONREAD does not (quiet_windows.go; such a connection fails on
// first use and is retried on a fresh one).
func TestQuietSeesEOF(t *testing.T) {
	t.Run("HTTP-5/peer-close-is-not-quiet", func(t *testing.T) {
		uc, peer := loopbackPair(t)
		peer.Close()
		testkit.WaitFor(t, 5*time.Second, "the EOF seen", func() bool { return !uc.quiet() })
	})
}
