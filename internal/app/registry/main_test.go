package registry

import (
	"io"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// holdEnv set: the test binary is a child that runs until its stdin closes, so a test can read
// a running process's creation stamp.
const holdEnv = "REGISTRY_TEST_HOLD"

func TestMain(m *testing.M) {
	if os.Getenv(holdEnv) != "" {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}
