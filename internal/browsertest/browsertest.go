// Package browsertest starts the headless Chromium that the browser tests drive over the
// DevTools protocol (chromedp): report's report.html test and lockstep serve's page test.
// Debian's chromium package installs it at ChromiumPath; .ci/run installs that package.
package browsertest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// ChromiumPath is where Debian's chromium package installs the browser.
const ChromiumPath = "/usr/bin/chromium"

// Start starts headless Chromium for the test t with a window of width x height CSS pixels,
// the flags that work in CI's sandbox (no sandbox, no GPU, no background networking) and a
// fresh profile, and stops it when the test ends. The whole browser lives at most limit: the
// allocator's context bounds it, so a hung page cannot hang the test. Without ChromiumPath
// the test is skipped, naming the package to install; a browser that does not start fails
// the test.
func Start(t testing.TB, limit time.Duration, width, height int) context.Context {
	t.Helper()
	if _, err := os.Stat(ChromiumPath); err != nil {
		t.Skipf("headless browser test needs %s: install Debian package chromium (apt-get install -y chromium)", ChromiumPath)
	}
	limitCtx, cancelLimit := context.WithTimeout(context.Background(), limit)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(limitCtx,
		chromedp.ExecPath(ChromiumPath),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height),
	)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	t.Cleanup(func() { cancelCtx(); cancelAlloc(); cancelLimit() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser, tied to ctx
		t.Fatalf("starting %s: %v", ChromiumPath, err)
	}
	return ctx
}
