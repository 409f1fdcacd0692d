//go:build race

package relay

// stackBudget is TestRelayIdleAfterTraffic's bound on goroutine stacks in
// bytes per idle tunnel under the race detector, whose frames are larger.
const stackBudget = 10 << 10
