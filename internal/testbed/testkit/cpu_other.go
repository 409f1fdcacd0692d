//go:build !unix

package testkit

import "time"

// ProcessCPU is 0 where getrusage(2) is missing (Windows): no cpu-ns/op
// there.
func ProcessCPU() time.Duration { return 0 }
