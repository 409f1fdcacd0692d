package wire

import "time"

// processCPU is 0 on Windows: no cpu-ns/op there.
func processCPU() time.Duration { return 0 }
