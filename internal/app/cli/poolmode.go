package cli

import (
	"encoding/json"
	"log/slog"

	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/dual-proxy/dual-proxy/envrewrite"
	"github.com/dual-proxy/dual-proxy/pool"
	"github.com/dual-proxy/dual-proxy/pool/balance"
	"github.com/dual-proxy/dual-proxy/pool/config"
	"github.com/dual-proxy/dual-proxy/pool/redisstate"
)

// Pool flag names.
const (
	fConfig          = "config"
	fPool            = "pool"
	fNoAgentPresets  = "no-agent-presets"
	fPoolToken       = "pool-token"
	fPoolState       = "pool-state"
	codexProviderKey = "dual-pool"
)

// poolFlags are the model-pool flags of a command.
func poolFlags(m mode) []cli.Flag {
	fs := []cli.Flag{
		&cli.StringFlag{Name: fConfig, TakesFile: true, EnvVars: []string{"DUAL_PROXY_CONFIG"}, Usage: "model pool YAML config (default " + configHint + " when it exists)"},
		&cli.StringFlag{Name: fPoolState, EnvVars: []string{"DUAL_PROXY_POOL_STATE"}, DefaultText: "the config's state:, else memory", Usage: "where the pool keeps bindings, cooldowns and counters: memory, or redis://[user:pass@]host:port/db (rediss:// for TLS) shared by a team's instances (wins over the config's state:)"},
	}
	if m == modeServe {
		return append(fs, &cli.StringFlag{Name: fPoolToken, EnvVars: []string{"DUAL_PROXY_POOL_TOKEN"}, Usage: "require this token (x-api-key or Bearer) on /pool/ endpoints"})
	}
	return append(fs,
		&cli.StringFlag{Name: fPool, EnvVars: []string{"DUAL_PROXY_POOL"}, Usage: "point the child at this model pool (sets ANTHROPIC_BASE_URL, OPENAI_BASE_URL, GOOGLE_GEMINI_BASE_URL and a per-launch token)"},
		&cli.BoolFlag{Name: fNoAgentPresets, Usage: "do not add agent-specific settings: Claude Code's --settings layer with the launcher's environment; in pool mode Codex -c provider overrides, OpenCode's OPENCODE_CONFIG_CONTENT, Gemini CLI's settings file, Qwen Code's --auth-type openai, Cline's provider settings"},
	)
}

// resolvePool loads the pool configuration named by --config (an explicit
// path must exist) or the default path (used only when present, except
// that the standalone proxy with a --pool-token gets an empty pool whose
// editor creates it). It returns nil when there is none. Errors name the
// flag or the YAML path, so the user knows which line to fix.
func resolvePool(c *cli.Context, s *Settings) error {
	path := c.String(fConfig)
	explicit := path != ""
	if !explicit {
		path = defaultConfigFile(s.Env)
	}
	s.ConfigPath = path
	getenv := func(k string) string { v, _ := envrewrite.Get(s.Env, k); return v }
	cfg, err := config.LoadConfig(path, getenv)
	switch {
	case err == nil:
		s.Pool = cfg
	case !explicit && errors.Is(err, fs.ErrNotExist) && s.Mode == modeServe && c.String(fPoolToken) != "":
		// No file yet, but a token to save with: an empty pool whose
		// editor creates the default file.
		s.Pool, s.ConfigMissing = &config.Config{}, true
	case !explicit && errors.Is(err, fs.ErrNotExist):
		s.ConfigPath = ""
	case !explicit && s.Mode != modeServe && c.String(fPool) == "":
		// A launcher that was not asked for a pool is not stopped by the
		// default file it only happened to find: it runs without pools
		// and says why (an unset key variable in that file must not
		// stop every `dual-proxy run -- CMD`).
		text := configErrorText(err)
		if config.AllErrors(err) == nil {
			text = fmt.Sprintf("%s: %v", path, err)
		}
		s.ConfigWarning = text + "\n  (" + path + " is the default pool configuration: this launcher runs without its pools; " +
			"fix what is listed, or pass --pool NAME to be stopped by it)"
		s.ConfigPath = ""
	case config.AllErrors(err) != nil:
		return usageError(fConfig, "%s%s", configErrorText(err), defaultConfigNote(explicit, path))
	default:
		return usageError(fConfig, "%s: %v%s", path, err, defaultConfigNote(explicit, path))
	}
	if v := c.String(fPoolState); v != "" {
		// Checked with no pool to use it too: a bad value is found when
		// it is given, not when a pool is added later.
		if err := config.CheckStateURL(v); err != nil {
			return usageError(fPoolState, "%v", err)
		}
	}
	if v := c.String(fPoolState); v != "" && s.Pool != nil {
		s.Pool.State.URL = v // the flag (or DUAL_PROXY_POOL_STATE) wins over state:, as a flag wins over the file
		s.PoolStateFlag = v
	}
	if s.Pool != nil && s.Pool.State.Shared() {
		if err := redisstate.CheckURL(s.Pool.State.URL); err != nil {
			return usageError(fPoolState, "%v", err)
		}
	}
	if c.Command != nil && s.Mode != modeServe {
		s.PoolName = c.String(fPool)
		s.AgentPresets = !c.Bool(fNoAgentPresets)
	}
	if s.Mode == modeServe {
		s.PoolToken = c.String(fPoolToken)
	}
	if s.PoolName != "" {
		if s.Pool == nil {
			return usageError(fPool, "no pool configuration (write %s or pass --config)", path)
		}
		pc := s.Pool.Pool(s.PoolName)
		if pc == nil {
			return usageError(fPool, "no pool %q in %s (pools: %s)", s.PoolName, path, strings.Join(poolNames(s.Pool), ", "))
		}
		s.PoolAPI = pc.API
	}
	return nil
}

// defaultConfigNote is the line a configuration error gets when the file
// was not named (--config, DUAL_PROXY_CONFIG) but found at the default
// path and the command needs it (the standalone proxy, a launcher with
// --pool), so the user learns which file stops the command and what to do
// (errors say where and how to fix).
func defaultConfigNote(explicit bool, path string) string {
	if explicit {
		return ""
	}
	return "\n  (" + path + " is the default pool configuration, read when no --config is given; " +
		"set the variables it names and fix what is listed; a launcher without --pool runs without it)"
}

// poolNames are the pools of cfg in file order, or "none".
func poolNames(cfg *config.Config) []string {
	var names []string
	for _, pc := range cfg.Pools {
		names = append(names, pc.ID)
	}
	if len(names) == 0 {
		names = []string{"none"}
	}
	return names
}

// newToken returns a random per-launch pool token: 192 bits from
// crypto/rand, so another local user can neither guess nor reuse it.
func newToken() string {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return "dpx-" + hex.EncodeToString(b)
}

// poolChild rewrites the child's environment and argv for pool mode
// (SPEC POOL-20): every pool serves all four APIs, so the base URLs and
// token of every agent point at it (envrewrite.RewritePool); agents that
// take their endpoint only from config get presets: Codex -c overrides for
// a provider named dual-pool (Responses), OpenCode an inline config
// (OPENCODE_CONFIG_CONTENT) for its anthropic, openai and google providers,
// Gemini CLI a settings file selecting API-key auth (geminiPreset), Qwen
// Code `--auth-type openai` unless the user chose one (qwenPreset), Cline
// a provider settings file for its OpenAI-compatible provider
// (clinePreset). cleanup
// removes what the presets wrote; call it when the child has ended.
// warnings are the one-line reasons a preset could not be applied, for the
// terminal and the log.
func poolChild(s *Settings, token string, port int, env, argv []string) (_, _ []string, cleanup func(), warnings []string) {
	cleanup = func() {}
	// The id as one escaped path segment: a pool id such as "50%off" or
	// "a#b" is served (the router reads the decoded path) but, written raw,
	// would not parse as the URL the child's SDK builds on.
	base := fmt.Sprintf("http://127.0.0.1:%d/pool/%s", port, url.PathEscape(s.PoolName))
	env = withoutChannelKeys(env, s.Pool)
	env = envrewrite.RewritePool(env, base, token)
	if !s.AgentPresets || len(argv) == 0 {
		return env, argv, cleanup, nil
	}
	switch commandName(argv[0]) {
	case "codex":
		pre := []string{
			"-c", `model_provider=` + tomlString(codexProviderKey),
			"-c", `model_providers.` + codexProviderKey + `.name=` + tomlString("dual-proxy pool "+s.PoolName),
			// OpenAI SDKs append /responses to a base ending in /v1.
			"-c", `model_providers.` + codexProviderKey + `.base_url=` + tomlString(base+"/v1"),
			"-c", `model_providers.` + codexProviderKey + `.env_key="OPENAI_API_KEY"`,
			"-c", `model_providers.` + codexProviderKey + `.wire_api="responses"`,
		}
		argv = append(append([]string{argv[0]}, pre...), argv[1:]...)
	case "opencode":
		env = envrewrite.Set(env, "OPENCODE_CONFIG_CONTENT", openCodeConfig(base, token, s.PoolAPI, poolModels(s)))
	case "gemini":
		var w string
		if env, cleanup, w = geminiPreset(env); w != "" {
			warnings = append(warnings, w)
		}
	case "qwen":
		argv = qwenPreset(env, argv)
	case "cline":
		var w string
		if env, cleanup, w = clinePreset(env, base, token, poolModels(s)); w != "" {
			warnings = append(warnings, w)
		}
	}
	return env, argv, cleanup, warnings
}

// tomlString is s as a TOML basic string for Codex's -c overrides, which
// parse their value as TOML: quoted, with '"', '\\' and control characters
// escaped (TOML 1.0 "String"), so no value can end the string early and
// add keys of its own (the pool id is checked at load; this
// holds for any value).
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\u%04X", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// geminiSettings select API-key auth: Gemini CLI 0.61 takes
// GOOGLE_GEMINI_BASE_URL as its "gateway" auth, which its -p mode then
// refuses ("Invalid auth method selected"); API-key auth uses the same base
// URL and GEMINI_API_KEY.
const geminiSettings = `{"security":{"auth":{"selectedType":"gemini-api-key"}}}`

// geminiPreset writes geminiSettings to a private file (writePreset) and
// names it in GEMINI_CLI_SYSTEM_SETTINGS_PATH, the settings layer that wins
// over the user's and the workspace's. Gemini CLI reads that file only when
// root owns it and every directory above it (geminiTrusts): for another user
// the file is not written, and unless the user's own settings
// ($GEMINI_CLI_HOME or ~, .gemini/settings.json) select API-key auth the
// warning says what to add there. A file that cannot be written leaves env
// as it is, with a warning.
func geminiPreset(env []string) (_ []string, cleanup func(), warning string) {
	noop := func() {}
	path, cleanup, err := writePreset(env, "gemini-settings.json", []byte(geminiSettings))
	if err != nil {
		return env, noop, "cannot write Gemini CLI's settings file selecting API-key auth for the pool (" + err.Error() + "): gemini -p will stop with \"Invalid auth method selected\""
	}
	if geminiTrusts(path) {
		return envrewrite.Set(env, "GEMINI_CLI_SYSTEM_SETTINGS_PATH", path), cleanup, ""
	}
	cleanup()
	user := geminiUserSettings(env)
	if b, err := os.ReadFile(user); err == nil && geminiSelectsAPIKey(b) {
		return env, noop, ""
	}
	return env, noop, "Gemini CLI reads a launcher's settings file only when root owns it and every directory above it, so the pool cannot select its API-key auth: " +
		"add {\"security\":{\"auth\":{\"selectedType\":\"gemini-api-key\"}}} to " + user + " (gemini -p stops with \"Invalid auth method selected\" without it)"
}

// geminiUserSettings is Gemini CLI's user settings file for env:
// .gemini/settings.json under $GEMINI_CLI_HOME, else the home directory.
func geminiUserSettings(env []string) string {
	h, _ := envrewrite.Get(env, "GEMINI_CLI_HOME")
	if h == "" {
		h, _ = envrewrite.Get(env, "HOME")
	}
	if h == "" {
		h, _ = envrewrite.Get(env, "USERPROFILE")
	}
	return filepath.Join(h, ".gemini", "settings.json")
}

// geminiSelectsAPIKey reports whether a Gemini CLI settings file selects
// API-key auth (security.auth.selectedType "gemini-api-key").
func geminiSelectsAPIKey(data []byte) bool {
	var doc struct {
		Security struct {
			Auth struct {
				SelectedType string `json:"selectedType"`
			} `json:"auth"`
		} `json:"security"`
	}
	return json.Unmarshal(data, &doc) == nil && doc.Security.Auth.SelectedType == "gemini-api-key"
}

// clinePreset points Cline 3.0 at the pool: it takes a base URL only for
// its OpenAI-compatible provider, so the launcher writes a provider
// settings file (the shape `cline auth -p openai -b URL -k KEY -m MODEL`
// writes) selecting that provider with the pool's …/v1, the per-launch
// token and the pool's first unified model (none: Cline's default), into a
// private file (writePreset) named in CLINE_PROVIDER_SETTINGS_PATH, which
// Cline reads instead of ~/.cline/data/settings/providers.json; its
// sessions and history stay where they are. CLINE_SESSION_BACKEND_MODE=local
// (unless set) keeps the model calls in the child: by default Cline hands
// them to a background hub daemon that outlives the launcher and does not
// have the pool's settings. A file that cannot be written leaves env as it
// is, with a warning.
func clinePreset(env []string, base, token string, models []string) (_ []string, cleanup func(), warning string) {
	settings := map[string]string{"provider": "openai-compatible", "apiKey": token, "baseUrl": base + "/v1"}
	if len(models) > 0 {
		settings["model"] = models[0]
	}
	doc := map[string]any{"version": 1, "lastUsedProvider": "openai-compatible", "modes": map[string]any{},
		"providers": map[string]any{"openai-compatible": map[string]any{
			"settings": settings, "updatedAt": time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), "tokenSource": "manual"}}}
	b, _ := json.Marshal(doc)
	path, cleanup, err := writePreset(env, "cline-providers.json", b)
	if err != nil {
		return env, func() {}, "cannot write Cline's provider settings for the pool (" + err.Error() + "): cline will call its default provider, not the pool"
	}
	env = envrewrite.Set(env, "CLINE_PROVIDER_SETTINGS_PATH", path)
	if _, ok := envrewrite.Get(env, "CLINE_SESSION_BACKEND_MODE"); !ok {
		env = envrewrite.Set(env, "CLINE_SESSION_BACKEND_MODE", "local")
	}
	return env, cleanup, ""
}

// commandName is a command's base name, lower case, without a Windows ".exe".
func commandName(cmd string) string {
	return strings.TrimSuffix(strings.ToLower(filepath.Base(cmd)), ".exe")
}

// openCodeConfig is OpenCode's inline configuration pointing its
// anthropic, openai and google providers at the pool (the AI SDK providers
// append /messages, /responses and /models/… to these base URLs). With
// models (the pool's unified models, poolModels), each provider lists them
// and the default model is the first on the provider of the pool's api
// (openCodeProvider): without one OpenCode picks a model of its own
// catalogue that the pool's members may not serve.
func openCodeConfig(base, token, api string, models []string) string {
	provider := func(u string) map[string]any {
		p := map[string]any{"options": map[string]string{"baseURL": u, "apiKey": token}}
		if len(models) > 0 {
			m := map[string]any{}
			for _, id := range models {
				m[id] = map[string]string{"name": id}
			}
			p["models"] = m
		}
		return p
	}
	doc := map[string]any{"provider": map[string]any{
		"anthropic": provider(base + "/v1"), "openai": provider(base + "/v1"), "google": provider(base + "/v1beta")}}
	if len(models) > 0 {
		doc["model"] = openCodeProvider(api) + "/" + models[0]
	}
	b, _ := json.Marshal(doc)
	return string(b)
}

// openCodeProvider is the OpenCode provider whose wire API is the pool's
// api (config.APIAnthropic, …), so the default model's calls need no
// translation when the members all speak one API: google for Gemini, openai
// for OpenAI Chat and Responses (its openai provider speaks Responses),
// else anthropic.
func openCodeProvider(api string) string {
	switch api {
	case config.APIGemini:
		return "google"
	case config.APIOpenAI, config.APIOpenAIChat:
		return "openai"
	}
	return "anthropic"
}

// poolModels are the unified model ids of pool s.PoolName in order: its
// models:, else the models its members' channels declare
// (config.ModelList); none when neither lists any.
func poolModels(s *Settings) []string {
	if s.Pool == nil {
		return nil
	}
	pc := s.Pool.Pool(s.PoolName)
	if pc == nil {
		return nil
	}
	var ids []string
	for _, m := range config.ModelList(s.Pool, pc) {
		ids = append(ids, m.ID)
	}
	return ids
}

// withoutChannelKeys removes from env every variable a channel's
// api_key_env names: the child gets only the per-launch
// token, never the keys the pool spends on its behalf.
func withoutChannelKeys(env []string, cfg *config.Config) []string {
	if cfg == nil {
		return env
	}
	for _, ch := range cfg.Channels {
		if ch.APIKeyEnv != "" {
			env = envrewrite.Unset(env, ch.APIKeyEnv)
		}
	}
	return env
}

// printPool writes the pool section of --print-config, keys redacted: the
// output is made to be pasted into a question or a bug report.
func printPool(s *Settings, w io.Writer) {
	if s.Pool == nil {
		fmt.Fprintln(w, "pools: (none)")
		return
	}
	if s.ConfigMissing {
		fmt.Fprintf(w, "pool config: %s (not yet created: the pool page's editor creates it)\n", s.ConfigPath)
	} else {
		fmt.Fprintf(w, "pool config: %s\n", s.ConfigPath)
	}
	fmt.Fprint(w, s.Pool.Redacted())
}

// poolState is the State of s.Pool: memory, or the shared Redis of state:
// / --pool-state, naming this instance by host and pid in the
// recent calls. An unreachable Redis is not an error: the pool starts on
// local state and says so on its status. nil means memory.
func poolState(s *Settings, log *slog.Logger) (balance.State, error) {
	sc := s.Pool.State
	if !sc.Shared() {
		return nil, nil
	}
	host, _ := os.Hostname()
	st, err := redisstate.New(redisstate.Options{URL: sc.URL, Prefix: config.StatePrefix(s.Pool), Timeout: sc.Timeout,
		Instance: fmt.Sprintf("%s:%d", host, os.Getpid()), Logger: log, Config: s.Pool})
	if err != nil {
		return nil, err
	}
	log.Info("pool state shared", "store", config.RedactStateURL(sc.URL), "prefix", config.StatePrefix(s.Pool), "degraded", st.Health().Degraded)
	return st, nil
}

// configErrorText is every error of a bad configuration file, one a line:
// the first after the flag ("--config: FILE:LINE:COLUMN: PATH: MSG", the
// shape of a single error), the others indented below it (SPEC POOL-3).
func configErrorText(err error) string {
	var b strings.Builder
	for i, e := range config.AllErrors(err) {
		if i > 0 {
			b.WriteString("\n  ")
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// poolGetenv resolves api_key_env from the process environment s holds.
func poolGetenv(s *Settings) func(string) string {
	return func(k string) string { v, _ := envrewrite.Get(s.Env, k); return v }
}

// newPool is the pool of s with its editor (the pool page's) on the file the
// configuration was read from, f: a save holds f's lock, is checked as a
// reload would check it, and is applied like SIGHUP (the whole file,
// all or nothing). f.pool is set to the pool.
func newPool(s *Settings, f *configFile, opts pool.Options, log *slog.Logger) *pool.Pool {
	opts.ConfigFile, opts.Getenv = s.ConfigPath, poolGetenv(s)
	opts.FileLock, opts.CheckFile = &f.mu, f.check
	opts.Reload = func() error { return f.reloadLocked("editor", false) }
	if st, err := poolState(s, log); err != nil {
		log.Error("pool state: going on in memory", "reason", err.Error()) // resolvePool checked the URL
	} else if st != nil {
		opts.State = st
	}
	p := pool.New(s.Pool, opts)
	f.pool = p
	return p
}
