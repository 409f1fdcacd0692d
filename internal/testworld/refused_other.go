//go:build !unix

package testworld

import "testing"

// holdRefusedPort is not available here; RefusedAddr binds and releases.
func holdRefusedPort(testing.TB) (string, bool) { return "", false }
