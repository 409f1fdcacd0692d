package signals

import (
	"encoding/json"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// argsOutEnv names a file: with it set, the test binary is a child that writes its arguments
// (os.Args after the program name) there as a JSON array and exits 0, so a test sees exactly
// what a program started through a .cmd file received.
const argsOutEnv = "SIGNALS_TEST_ARGS_OUT"

func TestMain(m *testing.M) {
	if out := os.Getenv(argsOutEnv); out != "" {
		data, err := json.Marshal(os.Args[1:])
		if err == nil {
			err = os.WriteFile(out, data, 0o600)
		}
		if err != nil {
			os.Exit(3)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}
