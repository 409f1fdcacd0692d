package testkit

import (
	"testing"
	"time"
)

// pollEvery is how often WaitFor re-evaluates its condition.
const pollEvery = 5 * time.Millisecond

// WaitFor polls cond every 5 ms until it returns true. When d passes first
// it fails tb with "timed out after D waiting for WHAT" (tb.Fatalf, so call
// it from the goroutine running the test or subtest it belongs to). It is
// how tests wait for an effect they cannot be told about on a channel; the
// sleep between polls is the polling interval, not synchronisation.
func WaitFor(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(pollEvery)
	}
}
