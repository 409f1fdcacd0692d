package main

import (
	"time"

	"golang.org/x/sys/unix"
)

// monoBase is CLOCK_MONOTONIC (ns) read once at start, and monoStart the
// time.Now taken right after it: Go's monotonic clock is CLOCK_MONOTONIC
// (vDSO) too, so monoBase + time.Since(monoStart) is CLOCK_MONOTONIC
// without a syscall per reading, within the ≈ 1 µs between the two reads.
var monoBase, monoStart = func() (int64, time.Time) {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return time.Now().UnixNano(), time.Now()
	}
	return ts.Nano(), time.Now()
}()

// monoNow is CLOCK_MONOTONIC in nanoseconds: one clock for every process of
// the machine (Linux), so the mock channel's stamp and the client's
// reading of the same event can be subtracted (scenario 7).
func monoNow() int64 { return monoBase + int64(time.Since(monoStart)) }
