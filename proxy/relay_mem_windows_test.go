package proxy

// idleTunnelStackBudget is TestIdleTunnelStacks' bound in bytes per tunnel.
// Windows' smallest goroutine stack is 8 KiB (runtime/stack.go: the 2 KiB
// minimum plus 4 KiB stackSystem, rounded up to a power of two), so two relay
// stacks take 16 KiB; a third (the connection goroutine's) would exceed this.
const idleTunnelStackBudget = 20 << 10
