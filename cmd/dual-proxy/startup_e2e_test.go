package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEmptyConfigWarns: a pool configuration file that defines nothing
// (empty, or only comments) loads, and the proxy says so once, naming the
// file, instead of logging "model pool loaded" (SPEC POOL-3).
func TestEmptyConfigWarns(t *testing.T) {
	for name, text := range map[string]string{"empty": "", "only-comments": "# channels:\n#   a: {api: anthropic}\n\n"} {
		t.Run("POOL-3/"+name+"-file-warns-once", func(t *testing.T) {
			cfg := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			_, logs, stop := startServe(t, nil, "--listen-port", "0", "--health-url", "", "--config", cfg)
			stop() // startServe returned after "listening": the start-up lines are all in
			out := logs()
			if n := strings.Count(out, "defines no channels and no pools"); n != 1 || !strings.Contains(out, "level=WARN") || !strings.Contains(out, "config="+cfg) {
				t.Fatalf("want one warning naming %s, got %d:\n%s", cfg, n, out)
			}
			if strings.Contains(out, "model pool loaded") {
				t.Fatalf("an empty file is reported as loaded:\n%s", out)
			}
		})
	}
}

// TestHealthTargetShown: the "listening" line names what the health check
// contacts (its origin, never a path), so a user who sees requests to the
// default health URL finds why in the first lines of the log (SPEC HC-1).
func TestHealthTargetShown(t *testing.T) {
	for arg, want := range map[string]string{"": "health=off", "http://127.0.0.1:9/some/path?tok=x": "health=http://127.0.0.1:9\n"} {
		t.Run("HC-1/listening-line-names-"+strings.TrimPrefix(strings.Fields(want)[0], "health="), func(t *testing.T) {
			_, logs, stop := startServe(t, nil, "--listen-port", "0", "--health-url", arg, "--health-interval-ms", "0")
			stop()
			out := logs()
			if !strings.Contains(out, want) || strings.Contains(out, "some/path") || strings.Contains(out, "tok=x") {
				t.Fatalf("want %q on the listening line, no path:\n%s", want, out)
			}
		})
	}
}
