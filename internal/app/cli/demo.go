package cli

import (
	"os"

	"github.com/urfave/cli/v2"

	"github.com/dual-proxy/dual-proxy/internal/app/demo"
)

// demo runs the offline demonstration (README's "run the main job").
func runDemo(c *cli.Context, sio IO) error {
	self, err := os.Executable()
	if err != nil {
		self = "dual-proxy"
	}
	if err := demoRun(demo.Options{Out: sio.Stdout, Self: self, NoCurl: c.Bool("no-curl"), Env: sio.Environ}); err != nil {
		return cli.Exit("dual-proxy demo: "+err.Error(), 1)
	}
	return nil
}

var demoRun = demo.Run
