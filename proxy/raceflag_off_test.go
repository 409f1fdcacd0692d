//go:build !race

package proxy

// raceEnabled: the test binary runs under the race detector.
const raceEnabled = false
