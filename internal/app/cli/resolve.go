package cli

import (
	"time"

	"github.com/urfave/cli/v2"

	"github.com/dual-proxy/dual-proxy/internal/app/settings"
)

// maxMS bounds every millisecond flag (one week), far below the
// time.Duration overflow.
const maxMS = settings.MaxMS

// resolve reads and validates the flags of c: one step per group of
// settings, in the order their errors are reported (the first bad value
// is the one named).
func resolve(c *cli.Context, m mode, environ []string) (*Settings, error) {
	s := &Settings{Mode: m, Env: environ}
	for _, step := range []func(*cli.Context, *Settings) error{
		resolveProxySettings, // internal/app/settings' checks, the command line's messages
		resolveLauncher,
		resolvePool,
		resolveFileSettings, // the config file's proxy: section
	} {
		if err := step(c, s); err != nil {
			return nil, err
		}
	}
	s.ControlToken = controlToken(c)
	return s, nil
}

// resolveLauncher reads a launcher's own settings (nothing for the
// standalone proxy): the log file, the kill delay and the child's command;
// claude-dual-proxy's starts with --command and its health check defaults
// to the agent's own endpoint (SPEC RUN-1).
func resolveLauncher(c *cli.Context, s *Settings) error {
	if s.Mode == modeServe {
		return nil
	}
	s.LogFile = c.String(fLogFile)
	if s.LogFile == "" {
		s.LogFile = defaultLogFile(s.Env)
	}
	ka := c.Int(fKillAfterMS)
	if ka < 1 || ka > maxMS {
		return usageError(fKillAfterMS, "must be 1-%d, got %d", maxMS, ka)
	}
	s.KillAfter = time.Duration(ka) * time.Millisecond
	s.Command = c.Args().Slice()
	if s.Mode != modeClaude {
		if len(s.Command) == 0 && !c.Bool(fPrintConfig) {
			return cli.Exit("dual-proxy run: missing command; usage: dual-proxy run [flags] -- CMD [ARGS...]", 2)
		}
		// The health check follows the agent it runs.
		if len(s.Command) > 0 && !c.IsSet(fHealthURL) {
			s.Live[settings.HealthURL], s.HealthWhy = runHealthURL(s.Command[0], s.Env)
			return s.check()
		}
		return nil
	}
	cmd := c.String(fCommand)
	if cmd == "" {
		return usageError(fCommand, "must not be empty")
	}
	s.Command = append([]string{cmd}, s.Command...)
	// Prove the path the agent really uses.
	if !c.IsSet(fHealthURL) {
		s.Live[settings.HealthURL] = claudeHealthURL(s.Env)
		return s.check()
	}
	return nil
}

// claudeHealthURL is claude-dual-proxy's default health check: the origin
// of $ANTHROPIC_BASE_URL when it is an http(s) URL, else Anthropic's API
// (SPEC RUN-1b).
func claudeHealthURL(environ []string) string {
	if o := originOf(environ, "ANTHROPIC_BASE_URL"); o != "" {
		return o
	}
	return defaultClaudeBase
}
