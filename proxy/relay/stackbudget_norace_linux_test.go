//go:build !race

package relay

// stackBudget is TestRelayIdleAfterTraffic's bound on goroutine stacks in
// bytes per idle tunnel without the race detector.
const stackBudget = 6 << 10
