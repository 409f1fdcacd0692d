package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/app/cli"
	"github.com/dual-proxy/dual-proxy/internal/app/registry"
)

// listEnv makes this test binary a child that prints, for each directory
// of its value (comma-separated), how many registry entries its parent has
// there (TestChildEnvKeepsTheUserRegistry).
const listEnv = "DUAL_PROXY_BENCH_LIST_REGISTRY"

func init() {
	dirs, ok := os.LookupEnv(listEnv)
	if !ok {
		return
	}
	var counts []string
	for _, dir := range strings.Split(dirs, ",") {
		n := 0
		es, _ := registry.List(dir)
		for _, e := range es {
			if e.PID == os.Getppid() {
				n++
			}
		}
		counts = append(counts, fmt.Sprint(n))
	}
	fmt.Println(strings.Join(counts, ","))
	os.Exit(0)
}

// TestChildEnvKeepsTheUserRegistry: a dual-proxy launcher started with the
// bench's child environment registers (SPEC OPS-6) under the bench's own
// directory, never in the user's registry, so `dual-proxy status` does not
// list a running bench (closing note's open item). The launcher runs
// in-process (its registration is what the bench's dual-proxy child does
// with the same environment); its child, this binary, reads both
// directories while the launcher runs.
func TestChildEnvKeepsTheUserRegistry(t *testing.T) {
	t.Run("OPS-6/bench-children-register-privately", testChildEnvRegistry)
}

func testChildEnvRegistry(t *testing.T) {
	home := t.TempDir()
	userDir := registry.HostDir(os.Getenv)
	private := filepath.Join(home, "run", "dual-proxy")
	env := append(childEnv(home), listEnv+"="+userDir+","+private)
	dir := t.TempDir()
	out, err := os.Create(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	errf, _ := os.Create(filepath.Join(dir, "err"))
	defer errf.Close()
	status := cli.DualProxy([]string{"run", "--listen-port", "0", "--health-url", "", "--upstream-host", "", "--", os.Args[0]},
		cli.IO{Stdout: out, Stderr: errf, Environ: env})
	got, _ := os.ReadFile(out.Name())
	stderr, _ := os.ReadFile(errf.Name())
	if status != 0 || strings.TrimSpace(string(got)) != "0,1" {
		t.Fatalf("status %d, entries (user registry %s, bench's %s) = %q, want 0,1; stderr %q",
			status, userDir, private, got, stderr)
	}
}
