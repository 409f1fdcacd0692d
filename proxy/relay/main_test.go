package relay

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no goroutine survives the package's tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
