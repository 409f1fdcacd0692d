//go:build !linux

package proxy

import "testing"

// countFDs: descriptors per tunnel (and splice pipes) are a Linux matter;
// under Wine /proc/self/fd would list the Wine process's own table.
func countFDs(t *testing.T) int {
	t.Skip("descriptor counts need Linux's /proc/self/fd")
	return 0
}
