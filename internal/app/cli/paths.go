package cli

import (
	"os"
	"path"
	"runtime"
	"strings"

	"github.com/dual-proxy/dual-proxy/envrewrite"
)

// Per-user file locations follow each OS's convention, where its users and tools expect them,
// with the semantics of os.UserConfigDir for the configuration:
//
//	             config file                                     launcher log
//	Linux, BSD   $XDG_CONFIG_HOME or ~/.config                   $XDG_STATE_HOME or ~/.local/state
//	             /dual-proxy/config.yaml                         /dual-proxy/launcher.log
//	macOS        ~/Library/Application Support                   ~/Library/Logs
//	             /dual-proxy/config.yaml                         /dual-proxy/launcher.log
//	Windows      %AppData%\dual-proxy\config.yaml                %LocalAppData%\dual-proxy\logs\launcher.log
//
// userPathsFor is a pure function of the OS name, the environment and the temporary directory,
// so every row is tested on every OS.

// userPaths are the per-user files the commands default to.
type userPaths struct {
	// ConfigFile is the model pool YAML read when it exists (--config).
	ConfigFile string
	// LogFile is the launchers' log file (--log-file).
	LogFile string
}

// logHint and configHint are the host's defaults as --help shows them.
var logHint, configHint = pathHints(runtime.GOOS)

// hostPaths returns the defaults of the OS the program runs on for the environment env.
func hostPaths(env []string) userPaths { return userPathsFor(runtime.GOOS, env, os.TempDir()) }

// defaultLogFile is the launcher log's default location: a file, so the
// child's terminal stays clean.
func defaultLogFile(env []string) string { return hostPaths(env).LogFile }

// defaultConfigFile is the model pool configuration's default location.
func defaultConfigFile(env []string) string { return hostPaths(env).ConfigFile }

// userPathsFor returns the defaults for goos (a runtime.GOOS value; SPEC OPS-1, PLAT-1). env
// is read with goos's name rule (case-insensitive on Windows). An unset or relative XDG
// variable is ignored, as os.UserConfigDir does. Without a home directory the log goes under tempDir and the config
// path stays relative (as before on Linux); on Windows %UserProfile%\AppData\{Roaming,Local}
// stands in for an unset %AppData% / %LocalAppData%.
func userPathsFor(goos string, env []string, tempDir string) userPaths {
	names := envrewrite.NamesFor(goos)
	get := func(k string) string { v, _ := names.Get(env, k); return v }
	switch goos {
	case "windows":
		profile := get("USERPROFILE")
		roaming, local := get("APPDATA"), get("LOCALAPPDATA")
		if roaming == "" && profile != "" {
			roaming = winJoin(profile, "AppData", "Roaming")
		}
		if local == "" {
			local = tempDir
			if profile != "" {
				local = winJoin(profile, "AppData", "Local")
			}
		}
		return userPaths{
			ConfigFile: winJoin(roaming, "dual-proxy", "config.yaml"),
			LogFile:    winJoin(local, "dual-proxy", "logs", "launcher.log"),
		}
	case "darwin", "ios":
		home := get("HOME")
		logHome := home
		if logHome == "" {
			logHome = tempDir
		}
		return userPaths{
			ConfigFile: path.Join(home, "Library", "Application Support", "dual-proxy", "config.yaml"),
			LogFile:    path.Join(logHome, "Library", "Logs", "dual-proxy", "launcher.log"),
		}
	}
	home := get("HOME")
	p := userPaths{ConfigFile: path.Join(home, ".config", "dual-proxy", "config.yaml")}
	if d := get("XDG_CONFIG_HOME"); path.IsAbs(d) {
		p.ConfigFile = path.Join(d, "dual-proxy", "config.yaml")
	}
	if home == "" {
		home = tempDir
	}
	p.LogFile = path.Join(home, ".local", "state", "dual-proxy", "launcher.log")
	if d := get("XDG_STATE_HOME"); path.IsAbs(d) {
		p.LogFile = path.Join(d, "dual-proxy", "launcher.log")
	}
	return p
}

// winJoin joins Windows path elements with backslashes; base "" gives a relative path.
func winJoin(base string, elems ...string) string {
	base = strings.TrimRight(base, `\/`)
	if base == "" {
		return strings.Join(elems, `\`)
	}
	return base + `\` + strings.Join(elems, `\`)
}

// pathHints describes the log and config defaults of goos for --help.
func pathHints(goos string) (logFile, configFile string) {
	switch goos {
	case "windows":
		return `%LocalAppData%\dual-proxy\logs\launcher.log`, `%AppData%\dual-proxy\config.yaml`
	case "darwin", "ios":
		return "~/Library/Logs/dual-proxy/launcher.log", "~/Library/Application Support/dual-proxy/config.yaml"
	}
	return "$XDG_STATE_HOME/dual-proxy/launcher.log", "$XDG_CONFIG_HOME/dual-proxy/config.yaml"
}
