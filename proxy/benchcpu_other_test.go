//go:build !unix

package proxy

import "testing"

// reportCPU reports nothing where getrusage is missing (Windows).
func reportCPU(*testing.B) {}
