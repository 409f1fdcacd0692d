package cli

import (
	"os"
	"testing"
)

// BenchmarkRunParse is the command-line part of every `dual-proxy run`
// start (the launcher start time of docs/BENCHMARKS.md): building the app, parsing `run --listen-port 0
// --health-url "" -- true`, urfave/cli's look-up of every flag, and
// resolving the settings (--print-config stops there, before the log file
// and the listener).
func BenchmarkRunParse(b *testing.B) {
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer devnull.Close()
	sio := IO{Stdout: devnull, Stderr: devnull, Environ: []string{"HOME=" + b.TempDir(), "PATH=/usr/bin:/bin"}}
	b.ReportAllocs()
	for b.Loop() {
		if st := DualProxy([]string{"run", "--listen-port", "0", "--health-url", "", "--print-config", "--", "true"}, sio); st != 0 {
			b.Fatalf("status %d", st)
		}
	}
}
