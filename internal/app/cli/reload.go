package cli

import (
	"cmp"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/dual-proxy/dual-proxy/internal/app/settings"
	"github.com/dual-proxy/dual-proxy/pool"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// configFile is the config file of a running instance (--config, or the
// default file it read) and the one lock every reader and writer of it
// holds, so no reload applies an older file over a save. A reload (SIGHUP, the file watch, the pool
// editor's save) reads the whole file once, checks every section —
// proxy:, channels:, pools:, state: — and applies them all, or applies
// nothing and says why: a log line per error, the settings document's
// file_errors (so `dual-proxy settings get` exits 1) and the pool's
// status. A settings change holds the same lock from applying to writing
// back, so a reload never applies the file as it was before a change
// answered 200.
type configFile struct {
	s   *Settings
	log *slog.Logger

	// mu is the file's lock: settings.Options.Lock and
	// pool.Options.FileLock.
	mu   sync.Mutex
	live *settings.Live // nil: the settings cannot change
	pool *pool.Pool     // nil: no pool served
	cfg  *config.Config // the pool configuration running
	// state is the state: the pool's store was built from at start (the
	// flag's over the file's), which runs until a restart whatever a
	// reload reads.
	state config.StateConfig
	// seen is the content last read or written under mu: the file watch
	// reloads only a content it has not seen.
	seen content
}

// content identifies a file's bytes, or its absence.
type content struct {
	sum     [sha256.Size]byte
	missing bool
	known   bool
}

// contentOf is the content of a read's result.
func contentOf(data []byte, err error) content {
	if err != nil {
		return content{missing: true, known: true}
	}
	return content{sum: sha256.Sum256(data), known: true}
}

// newConfigFile is the config file of s, the pool configuration s loaded
// at start running.
func newConfigFile(s *Settings, log *slog.Logger) *configFile {
	f := &configFile{s: s, log: log, cfg: s.Pool}
	if s.Pool != nil {
		f.state = s.Pool.State
	}
	if s.ConfigPath != "" {
		data, err := os.ReadFile(s.ConfigPath)
		f.seen = contentOf(data, err)
	}
	return f
}

// reload reads and applies the whole file as by says ("SIGHUP", "file
// watch"); onlyChanged: nothing is done for a content already seen (the
// watch, after this instance's own write). The result is reloadLocked's.
func (f *configFile) reload(by string, onlyChanged bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reloadLocked(by, onlyChanged)
}

// reloadLocked is reload with f.mu held (the editor's save applies its
// file this way). Without a file it does nothing. An error is the
// reload's refusal: every error of the file (config.ConfigErrors, each at
// FILE:LINE:COL, never repeating a value of the proxy: section), a file
// that cannot be read (a missing one included), or the engine refusing
// the settings; nothing was applied then.
func (f *configFile) reloadLocked(by string, onlyChanged bool) error {
	path := f.s.ConfigPath
	if path == "" {
		return nil
	}
	data, err := os.ReadFile(path)
	c := contentOf(data, err)
	if onlyChanged && c == f.seen {
		return nil
	}
	f.seen = c
	if err != nil {
		return f.failed(by, fmt.Errorf("%w (nothing reloaded)", err))
	}
	cfg, perr := config.ParseConfig(data, poolGetenv(f.s))
	for _, e := range config.AllErrors(perr) {
		e.File = path
	}
	var fc *settings.FileChange
	var serr error
	if f.live != nil {
		fc, serr = f.live.PrepareFile(data)
	}
	if err := fileErrors(path, perr, serr); err != nil {
		return f.failed(by, err)
	}
	if f.s.PoolStateFlag != "" {
		cfg.State.URL = f.s.PoolStateFlag // the flag wins over state:, as a flag wins over the file
	}
	if fc != nil {
		if err := fc.Commit(); err != nil {
			return f.failed(by, err)
		}
	}
	old := f.cfg
	if f.pool != nil {
		f.pool.Reload(cfg)
	}
	f.cfg = cfg
	var keys []string
	if fc != nil {
		keys = fc.Keys()
	}
	f.log.Info("config file reloaded", "by", by, "config", path, "pools", len(cfg.Pools), "channels", len(cfg.Channels), "changed", changes(keys, old, cfg))
	if old != nil && !sameStore(f.state, cfg.State) && !sameStore(old.State, cfg.State) {
		f.log.Warn("the config file's state: changed: the pool keeps its state store until a restart", "config", path)
	}
	// What else follows the file is updated here: the registry's list
	// of pools (`pool test` finds a pool just added).
	registerPools(f.s, cfg, f.log)
	warnEmptyConfig(path, cfg, f.log)
	return nil
}

// sameStore reports whether two state: settings mean the same store: the
// same shared store, name and timeout, or both the in-process one
// ("memory", or no state: at all; a name or a timeout means nothing there).
// A reload warns that the file's state: changed only when it moved from
// the file last applied (not at a comment) to a store other than the one
// running (not when it comes back to it).
func sameStore(a, b config.StateConfig) bool {
	if !a.Shared() && !b.Shared() {
		return true
	}
	return a == b
}

// maxLoggedErrors bounds the log lines of one refused reload (a file of
// thousands of bad lines must not flood the log).
const maxLoggedErrors = 20

// failed records err as the reason the reload by did not apply: the
// settings document's file_errors, the pool's status, one log line per
// error (at most maxLoggedErrors, then the count). f.mu held. It returns
// err.
func (f *configFile) failed(by string, err error) error {
	lines := errorLines(err)
	if f.live != nil {
		f.live.FileFailed(lines)
	}
	if f.pool != nil {
		f.pool.ReloadFailed(err)
	}
	for i, line := range lines {
		if i == maxLoggedErrors {
			f.log.Warn("config file not reloaded: more errors", "by", by, "config", f.s.ConfigPath, "more", len(lines)-i)
			break
		}
		f.log.Warn("config file not reloaded: nothing of it applied, the settings and pools stay as they were", "by", by, "reason", line)
	}
	return err
}

// errorLines are err's messages, one per error.
func errorLines(err error) []string {
	if es := config.AllErrors(err); es != nil {
		return config.ConfigErrors(es).Lines()
	}
	return []string{err.Error()}
}

// fileErrors joins the errors of one file's sections, the pool's (perr)
// and the proxy's (serr), in file order, an error the two parsers share
// (a YAML syntax error) once; nil when both are nil.
func fileErrors(path string, perr, serr error) error {
	var all config.ConfigErrors
	seen := map[string]bool{}
	for _, err := range []error{perr, serr} {
		if err == nil {
			continue
		}
		es := config.AllErrors(err)
		if es == nil {
			es = []*config.ConfigError{{File: path, Msg: err.Error()}}
		}
		for _, e := range es {
			if line := e.Error(); !seen[line] {
				seen[line] = true
				all = append(all, e)
			}
		}
	}
	if len(all) == 0 {
		return nil
	}
	slices.SortStableFunc(all, func(a, b *config.ConfigError) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	return all
}

// changes says what a reload changed, for its log line: the proxy
// settings' keys, then the pools and channels added (+), removed (-) or
// changed (~) by id; "nothing" when nothing did. Never a value: a channel
// that changed may have changed its key.
func changes(keys []string, old, cfg *config.Config) string {
	var parts []string
	if len(keys) > 0 {
		parts = append(parts, "proxy: "+strings.Join(keys, ", "))
	}
	if old == nil {
		old = &config.Config{}
	}
	var oldPools, newPools, oldChans, newChans []idItem
	for _, p := range old.Pools {
		oldPools = append(oldPools, idItem{p.ID, p})
	}
	for _, p := range cfg.Pools {
		newPools = append(newPools, idItem{p.ID, p})
	}
	for _, c := range old.Channels {
		oldChans = append(oldChans, idItem{c.ID, c})
	}
	for _, c := range cfg.Channels {
		newChans = append(newChans, idItem{c.ID, c})
	}
	samePool := func(a, b any) bool { return reflect.DeepEqual(a, b) }
	sameChan := func(a, b any) bool { return a.(*config.Channel).Same(b.(*config.Channel)) }
	if d := diffIDs(oldPools, newPools, samePool); d != "" {
		parts = append(parts, "pools: "+d)
	}
	if d := diffIDs(oldChans, newChans, sameChan); d != "" {
		parts = append(parts, "channels: "+d)
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, "; ")
}

// idItem is a pool or a channel by id.
type idItem struct {
	id string
	v  any
}

// diffIDs lists the ids of now that are not in before (+id), those of
// before gone (-id) and those in both that differ (~id), in that order.
func diffIDs(before, now []idItem, same func(a, b any) bool) string {
	var out []string
	find := func(l []idItem, id string) (any, bool) {
		for _, it := range l {
			if it.id == id {
				return it.v, true
			}
		}
		return nil, false
	}
	for _, it := range now {
		if _, ok := find(before, it.id); !ok {
			out = append(out, "+"+it.id)
		}
	}
	for _, it := range before {
		if _, ok := find(now, it.id); !ok {
			out = append(out, "-"+it.id)
		}
	}
	for _, it := range now {
		if v, ok := find(before, it.id); ok && !same(v, it.v) {
			out = append(out, "~"+it.id)
		}
	}
	return strings.Join(out, " ")
}

// check is the editor's check of a file it would save (pool.Options.
// CheckFile): the proxy: section as a reload would read it; f.mu held.
func (f *configFile) check(data []byte) error {
	if f.live == nil {
		return nil
	}
	_, err := f.live.PrepareFile(data)
	return err
}

// written is told the file as the settings' write-back read it (nil:
// missing) and the text it wrote (settings.Options.Written); f.mu held.
// The text counts as seen only when what it replaced was seen too: a file
// another instance changed since the last reload here holds that change
// in the text as well, and the watch must reload it for it to run here
// (two instances on one file converge).
func (f *configFile) written(before, after []byte) {
	was := contentOf(before, nil)
	if before == nil {
		was = contentOf(nil, os.ErrNotExist)
	}
	if was == f.seen {
		f.seen = contentOf(after, nil)
	}
}

// warnEmptyConfig logs one warning when cfg, read from path, defines no
// channel and no pool (an empty or all-comments file loads without an
// error, and a user who meant to configure pools learnt nothing;
// the configuration says what is wrong with it). It reports
// whether it warned.
func warnEmptyConfig(path string, cfg *config.Config, log *slog.Logger) bool {
	if cfg == nil || len(cfg.Channels) > 0 || len(cfg.Pools) > 0 {
		return false
	}
	log.Warn("the pool configuration defines no channels and no pools (empty, or only comments): no model pool is served; the README's \"Model pool\" section has an example",
		"config", path)
	return true
}
