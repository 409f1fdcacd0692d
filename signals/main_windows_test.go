package signals

import (
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/windows"

	"go.uber.org/goleak"
)

// argsOutEnv names a file: with it set, the test binary is a child that writes its arguments
// (os.Args after the program name) there as a JSON array and exits 0, so a test sees exactly
// what a program started through a .cmd file received.
const argsOutEnv = "SIGNALS_TEST_ARGS_OUT"

// grandchildOutEnv names a file: with it set, the test binary is a child that at once starts a
// grandchild (the test binary with holdEnv set), writes the grandchild's pid there and exits 0
// (4 when the grandchild cannot be started). With breakawayEnv=1 the grandchild is started with
// CREATE_BREAKAWAY_FROM_JOB.
const (
	grandchildOutEnv = "SIGNALS_TEST_GRANDCHILD_OUT"
	breakawayEnv     = "SIGNALS_TEST_BREAKAWAY"
	holdEnv          = "SIGNALS_TEST_HOLD"
)

func TestMain(m *testing.M) {
	if os.Getenv(holdEnv) != "" {
		time.Sleep(10 * time.Minute) // a grandchild that stays until it is ended
		os.Exit(0)
	}
	if out := os.Getenv(grandchildOutEnv); out != "" {
		os.Exit(startGrandchild(out, os.Getenv(breakawayEnv) == "1"))
	}
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

// startGrandchild is the grandchildOutEnv child: it starts the holding grandchild and writes its
// pid to out (through a rename, so a reader never sees half of it).
func startGrandchild(out string, breakaway bool) int {
	self, err := os.Executable()
	if err != nil {
		return 4
	}
	gc := exec.Command(self, "-test.run=^$")
	gc.Env = append(os.Environ(), holdEnv+"=1", grandchildOutEnv+"=")
	if breakaway {
		gc.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_BREAKAWAY_FROM_JOB}
	}
	if err := gc.Start(); err != nil {
		return 4
	}
	if os.WriteFile(out+".tmp", []byte(strconv.Itoa(gc.Process.Pid)), 0o600) != nil || os.Rename(out+".tmp", out) != nil {
		return 5
	}
	return 0
}
