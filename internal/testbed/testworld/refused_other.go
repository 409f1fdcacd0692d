//go:build !unix

package testworld

// holdRefusedPort is not available here; RefusedAddr binds and releases.
func holdRefusedPort() (string, func(), bool) { return "", nil, false }
