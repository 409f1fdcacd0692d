package cli

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/dual-proxy/dual-proxy/internal/app/cli/complete"
	"github.com/dual-proxy/dual-proxy/internal/app/cli/manpage"
)

// Shell completion and man pages, both generated from the command-line
// definitions (dualProxyApp, claudeApp) so they cannot drift from them.
// The descriptions name the host OS's default files (pathHints); docs/*.1
// are generated on Linux.

// dualProxyDescription and claudeDescription are the programs' long
// descriptions (--help, the man pages), naming the host's default files
// (logHint, configHint).
func dualProxyDescription() string {
	return `dual-proxy listens on 127.0.0.1:7898 and forwards each request over the first path that works: the upstream gateway, further gateways, the parent's proxy variables, or direct. "dual-proxy run -- CMD" starts CMD with HTTP(S)_PROXY pointing at an in-process proxy; everything after "--" goes to CMD unchanged.

Every flag can also be set by the environment variable shown beside it; a flag on the command line wins. A bad value in the environment is reported under the variable's name.

Files: the model pool configuration is ` + configHint + ` (--config); launchers log to ` + logHint + ` (--log-file), which is where "see the log" points.

Shell completion: "dual-proxy completion bash|zsh|fish|powershell" prints a script for dual-proxy and claude-dual-proxy.`
}

func claudeDescription() string {
	return `claude-dual-proxy starts Claude Code (claude, or --command) with HTTP(S)_PROXY pointing at an in-process dual-proxy. Its own flags come first; claude's arguments go after "--":

    claude-dual-proxy --gateway 10.0.0.3:8080 -- -p "hi"

Every flag can also be set by the environment variable shown beside it. The launcher logs to ` + logHint + ` (--log-file) so the terminal stays clean.`
}

// argValues are the values a command's first positional argument takes,
// offered by every shell's completion and named by extraArgs.
var argValues = map[string][]string{
	"completion": {"bash", "zsh", "fish", "powershell"},
	"man":        {"dual-proxy", "claude-dual-proxy"},
}

// completion is what the shell completion offers beyond the command tree:
// argValues, the words of --log-level and --log-format, and the pool and
// model names of the configuration file for --pool and pool test.
var completion = &complete.Spec{
	Args: argValues,
	Flags: map[string][]string{
		fLogLevel:  {"debug", "info", "warn", "error"},
		fLogFormat: {"text", "json"},
	},
	PoolFlag:      fPool,
	PoolTest:      "pool test",
	ConfigFlag:    fConfig,
	ConfigEnv:     "DUAL_PROXY_CONFIG",
	DefaultConfig: defaultConfigFile,
}

// completionCommand is `dual-proxy completion bash|zsh|fish|powershell`: print a
// completion script for both programs.
func completionCommand(sio IO) *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script for dual-proxy and claude-dual-proxy (bash, zsh, fish or powershell)",
		UsageText: "dual-proxy completion bash|zsh|fish|powershell\n\n   bash: source <(dual-proxy completion bash)   (e.g. in ~/.bashrc)\n   zsh:  source <(dual-proxy completion zsh)    (after compinit)\n   fish: dual-proxy completion fish > $__fish_config_dir/completions/dual-proxy.fish\n         (~/.config/fish, or $XDG_CONFIG_HOME/fish when that is set; and the same file as\n         claude-dual-proxy.fish: fish loads one per command)\n   powershell: dual-proxy completion powershell | Out-String | Invoke-Expression   (e.g. in $PROFILE)",
		Action: func(c *cli.Context) error {
			script, err := completionScript(c.Args().First(), sio)
			if err != nil {
				return cli.Exit("dual-proxy completion: "+err.Error(), 2)
			}
			_, err = fmt.Fprint(c.App.Writer, script)
			return err
		},
	}
}

// completionScript is the script for shell. bash and zsh ask the program
// itself (complete.RequestFlag, answered by completion.Answer) and fall
// back to file names after "--", where the words belong to the child; fish
// and PowerShell get static completions generated from the definitions.
func completionScript(shell string, sio IO) (string, error) {
	switch shell {
	case "bash":
		return complete.Bash, nil
	case "zsh":
		return complete.Zsh, nil
	case "fish":
		return completion.Fish(dualProxyApp(sio)) + "\n" + completion.Fish(claudeApp(sio)), nil
	case "powershell", "pwsh":
		return completion.PowerShell(dualProxyApp(sio), claudeApp(sio)), nil
	case "":
		// No shell named: say how the script is used, not `got ""`.
		return "", fmt.Errorf("name your shell: bash, zsh, fish or powershell (e.g. source <(dual-proxy completion bash))")
	}
	return "", fmt.Errorf("want bash, zsh, fish or powershell, got %q", shell)
}

// manCommand is `dual-proxy man [claude-dual-proxy]`: print the man page
// (roff, section 1). docs/*.1 are its output on Linux, kept in sync by
// TestManPages.
func manCommand(sio IO) *cli.Command {
	return &cli.Command{
		Name:      "man",
		Usage:     "print the man page (dual-proxy man | man -l -; add claude-dual-proxy for the launcher's)",
		UsageText: "dual-proxy man [claude-dual-proxy]",
		Action: func(c *cli.Context) error {
			// No environment: the page shows the per-OS defaults, as docs/*.1 do,
			// not this user's paths.
			page, err := manpage.Page(c.Args().First(), logHint, configHint)
			if err != nil {
				return cli.Exit("dual-proxy man: "+err.Error(), 2)
			}
			_, err = fmt.Fprint(c.App.Writer, page)
			return err
		},
	}
}
