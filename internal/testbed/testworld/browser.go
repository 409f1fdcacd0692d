//go:build browser

package testworld

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromiumNames are the names Chromium is installed under (Debian's
// chromium, Ubuntu's chromium-browser), looked up on PATH in this order.
var chromiumNames = []string{"chromium", "chromium-browser"}

// Browser starts headless Chromium under chromedp for a browser-tagged
// test: loopback only (every host name but 127.0.0.1 resolves to nothing),
// no background traffic (chromedp's defaults plus no component update), no
// sandbox and no GPU (CI runs as root in a container), a fresh profile in
// tb.TempDir() and a window of width×height CSS pixels. The returned
// context carries the browser and ends after timeout or with tb (its
// Context); cancel ends the browser, and tb.Cleanup calls it too for a
// test that keeps the browser to its end. Chromium missing from PATH fails
// tb with the command that installs it: the browser suites exist to run it
// (.ci/run installs it).
func Browser(tb testing.TB, width, height int, timeout time.Duration) (ctx context.Context, cancel context.CancelFunc) {
	tb.Helper()
	var bin string
	for _, name := range chromiumNames {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		tb.Fatal("chromium not found on PATH: apt-get install -y --no-install-recommends chromium fonts-dejavu-core")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"), chromedp.UserDataDir(tb.TempDir()),
		chromedp.WindowSize(width, height))
	actx, cancelA := chromedp.NewExecAllocator(tb.Context(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	ctx, cancelC := context.WithTimeout(ctx, timeout)
	cancel = func() { cancelC(); cancelB(); cancelA() }
	tb.Cleanup(cancel)
	return ctx, cancel
}
