package cli

import (
	"errors"
	"log/slog"

	"github.com/dual-proxy/dual-proxy/internal/settings"

	"github.com/dual-proxy/dual-proxy/pool"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// reloadPool re-reads the pool configuration on SIGHUP (SPEC POOL-16);
// bindings whose member still exists are kept. A bad file keeps the old
// configuration.
func reloadPool(s *Settings, p *pool.Pool, log *slog.Logger) {
	if s.ConfigPath == "" || p == nil {
		log.Info("SIGHUP: no pool configuration to reload")
		return
	}
	if err := applyPool(s, p, log); err != nil {
		log.Warn("SIGHUP: pool configuration not reloaded", "config", s.ConfigPath, "reason", err.Error())
	}
}

// reloadFile re-reads the whole config file on SIGHUP: the pool (SPEC
// POOL-16) and the proxy: section of live (SPEC OPS-7; nil: none). A bad
// proxy: section keeps the settings as they were and logs each error at
// FILE:LINE:COL; the settings document shows them until a reload
// succeeds.
func reloadFile(s *Settings, p *pool.Pool, live *settings.Live, log *slog.Logger) {
	reloadPool(s, p, log)
	if live == nil {
		return
	}
	err := live.Reload()
	if err == nil {
		return
	}
	lines := []string{err.Error()}
	var ls interface{ Lines() []string }
	if errors.As(err, &ls) {
		lines = ls.Lines()
	}
	for _, line := range lines {
		log.Warn("SIGHUP: proxy settings not reloaded, they stay as they were", "reason", line)
	}
}

// applyPool re-reads s.ConfigPath and applies it to p in place (SIGHUP, and
// the editor's save, SPEC POOL-16/POOL-22). An error keeps the old
// configuration.
func applyPool(s *Settings, p *pool.Pool, log *slog.Logger) error {
	cfg, err := config.LoadConfig(s.ConfigPath, poolGetenv(s))
	if err != nil {
		p.ReloadFailed(err) // `dual-proxy status` and the pool page show it
		return err
	}
	p.Reload(cfg) // logs "pool configuration reloaded" once, with the counts
	registerPools(s, cfg, log)
	warnEmptyConfig(s.ConfigPath, cfg, log)
	return nil
}

// warnEmptyConfig logs one warning when cfg, read from path, defines no
// channel and no pool (an empty or all-comments file loads without an
// error, and a user who meant to configure pools learnt nothing; SPEC
// POOL-3: the configuration says what is wrong with it). It reports
// whether it warned.
func warnEmptyConfig(path string, cfg *config.Config, log *slog.Logger) bool {
	if cfg == nil || len(cfg.Channels) > 0 || len(cfg.Pools) > 0 {
		return false
	}
	log.Warn("the pool configuration defines no channels and no pools (empty, or only comments): no model pool is served; the README's \"Model pool\" section has an example",
		"config", path)
	return true
}
