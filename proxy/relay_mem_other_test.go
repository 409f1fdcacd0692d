//go:build !windows

package proxy

// idleTunnelStackBudget is TestIdleTunnelStacks' bound in bytes per tunnel:
// two 2 KiB minimum stacks with room to spare, under three.
const idleTunnelStackBudget = 10 << 10
