package proxy

import (
	"os"
	"testing"
)

// countFDs is the number of this process's open descriptors (/proc/self/fd).
func countFDs(t *testing.T) int {
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(es)
}
