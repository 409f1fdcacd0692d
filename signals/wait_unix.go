//go:build linux || darwin

package signals

import (
	"errors"

	"golang.org/x/sys/unix"
)

// selectInput blocks, with select(2), until the terminal in has bytes (or hung up: the read
// then tells) or the cancel pipe became readable. stop is true when copying must end: cancelled,
// select failed, or a descriptor is beyond FD_SETSIZE; ready is false after EINTR. It is macOS's
// waitInput (pollInput, in sys_linux.go, is Linux's); it builds on Linux too, so the Linux PTY
// tests also run it (SIGNALS_TEST_SELECT).
func selectInput(in, cancel int) (ready, stop bool) {
	if in < 0 || cancel < 0 || in >= unix.FD_SETSIZE || cancel >= unix.FD_SETSIZE {
		return false, true
	}
	var r unix.FdSet
	r.Set(in)
	r.Set(cancel)
	if _, err := unix.Select(max(in, cancel)+1, &r, nil, nil, nil); err != nil {
		return false, !errors.Is(err, unix.EINTR)
	}
	if r.IsSet(cancel) {
		return false, true
	}
	return r.IsSet(in), false
}
