package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/app/registry"
	"github.com/dual-proxy/dual-proxy/internal/app/settings"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/pool"
	"github.com/dual-proxy/dual-proxy/pool/config"
	"github.com/dual-proxy/dual-proxy/proxy"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
)

// fileWorld is an instance's config file in process: the live settings
// and the pool on one file, reloaded as SIGHUP, the watch and the editor
// do (configFile), with the settings API on a loopback listener.
type fileWorld struct {
	path    string
	f       *configFile
	live    *settings.Live
	pool    *pool.Pool
	client  *settings.Client
	logs    *testkit.LogBuffer
	running atomic.Int64 // cooldown-ms as last applied to the "engine"
}

const fileWorldToken = "file-world-control-token"

// newFileWorld writes text to a config file and starts the settings and
// the pool on it as `dual-proxy --config FILE` does.
func newFileWorld(t *testing.T, text string) *fileWorld {
	t.Helper()
	w := &fileWorld{path: filepath.Join(t.TempDir(), "config.yaml"), logs: &testkit.LogBuffer{}}
	w.write(t, text)
	log := w.logs.Logger()
	s := &Settings{Mode: modeServe, ConfigPath: w.path, ConfigExplicit: true, Env: []string{"A_KEY=key-a", "B_KEY=key-b"}}
	cfg, err := config.LoadConfig(w.path, poolGetenv(s))
	if err != nil {
		t.Fatal(err)
	}
	s.Pool = cfg
	w.f = newConfigFile(s, log)
	defaults := flagDefaults(modeServe)
	w.live, err = settings.New(settings.Options{
		Values: defaults, Defaults: defaults, File: w.path, WriteBack: true, Logger: log,
		Lock: &w.f.mu, Written: w.f.written,
		Apply: func(r *settings.Resolved) error {
			w.running.Store(int64(r.Values.Int(settings.CooldownMS)))
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	w.f.live = w.live
	w.pool = newPool(s, w.f, pool.Options{Logger: log}, log)
	if err := w.f.reload("start", false); err != nil { // the file's proxy: section, as at start
		t.Fatal(err)
	}
	srv := httptest.NewServer(settings.Handler(w.live, fileWorldToken))
	t.Cleanup(srv.Close)
	w.client = &settings.Client{Addr: strings.TrimPrefix(srv.URL, "http://"), Token: fileWorldToken}
	return w
}

// write replaces the file as an editor that saves in place does.
func (w *fileWorld) write(t *testing.T, text string) {
	t.Helper()
	if err := os.WriteFile(w.path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// onDisk is cooldown-ms in the file's proxy: section.
func (w *fileWorld) onDisk(t *testing.T) int {
	t.Helper()
	data, err := os.ReadFile(w.path)
	if err != nil {
		t.Fatal(err)
	}
	sec, err := settings.ReadSection(data, w.path)
	if err != nil {
		t.Fatal(err)
	}
	return sec.Values.Int(settings.CooldownMS)
}

// pools are the pool ids the pool serves.
func (w *fileWorld) pools() string {
	var ids []string
	for _, p := range w.pool.Status().Pools {
		ids = append(ids, p.ID)
	}
	return strings.Join(ids, ",")
}

const twoPools = `# pools and the path of this machine
channels:
  a: {api: anthropic, base_url: http://127.0.0.1:9, api_key_env: A_KEY}
pools:
  p: {members: [a]}
proxy:
  cooldown-ms: 7000 # short
`

// TestReloadTransaction: a reload reads, checks and applies the whole
// config file — proxy:, channels:, pools:, state: — under the file's
// lock, or applies nothing and says why (SPEC OPS-7, POOL-16).
func TestReloadTransaction(t *testing.T) {
	t.Run("OPS-7/put-and-sighup-in-any-order-200-is-what-runs-and-what-is-on-disk", func(t *testing.T) {
		w := newFileWorld(t, twoPools)
		const rounds = 240
		for i := range rounds {
			want := 1000 + i
			by := [...]string{"SIGHUP", "file watch", "editor"}[i%3]
			var wg sync.WaitGroup
			var putErr, reloadErr error
			wg.Add(2)
			go func() {
				defer wg.Done()
				_, putErr = w.client.Set(context.Background(), map[string]any{settings.CooldownMS: want})
			}()
			go func() {
				defer wg.Done()
				reloadErr = w.f.reload(by, by == "file watch")
			}()
			wg.Wait()
			if putErr != nil || reloadErr != nil {
				t.Fatalf("round %d: PUT %v, reload (%s) %v", i, putErr, by, reloadErr)
			}
			if got, disk := w.running.Load(), w.onDisk(t); got != int64(want) || disk != want {
				t.Fatalf("round %d: PUT %d answered 200, then a reload (%s): running %d, on disk %d", i, want, by, got, disk)
			}
		}
		if w.pools() != "p" {
			t.Fatalf("pools %q after the rounds", w.pools())
		}
	})
	t.Run("OPS-7/missing-file-keeps-the-settings-and-the-pools", func(t *testing.T) {
		w := newFileWorld(t, twoPools)
		v := w.live.Document().Version
		if err := os.Remove(w.path); err != nil {
			t.Fatal(err)
		}
		if err := w.f.reload("SIGHUP", false); err == nil {
			t.Fatal("a missing file reloaded without an error")
		}
		doc := w.live.Document()
		if w.running.Load() != 7000 || doc.Version != v || doc.Sources[settings.CooldownMS] != settings.SourceFile || w.pools() != "p" {
			t.Fatalf("a missing file changed what runs: cooldown %d (%s), version %s → %s, pools %q", w.running.Load(), doc.Sources[settings.CooldownMS], v, doc.Version, w.pools())
		}
		if len(doc.FileErrors) != 1 || !strings.Contains(doc.FileErrors[0], w.path) || len(w.pool.Status().Config.ReloadErrors) != 1 {
			t.Fatalf("the refusal is not reported: settings %q, pool %q", doc.FileErrors, w.pool.Status().Config.ReloadErrors)
		}
		if !strings.Contains(w.logs.String(), "config file not reloaded") {
			t.Fatalf("no log line:\n%s", w.logs)
		}
	})
	t.Run("OPS-7/refused-proxy-section-keeps-the-pools", func(t *testing.T) {
		w := newFileWorld(t, twoPools)
		w.write(t, "channels:\n  a: {api: anthropic, base_url: http://127.0.0.1:9, api_key_env: A_KEY}\npools: {}\nproxy:\n  cooldwn-ms: 1\n")
		err := w.f.reload("SIGHUP", false)
		if err == nil || !strings.Contains(err.Error(), w.path+":5:3: proxy.cooldwn-ms") {
			t.Fatalf("reload error %v, want it at the misspelt key", err)
		}
		if w.pools() != "p" || w.running.Load() != 7000 {
			t.Fatalf("a refused proxy: section changed what runs: pools %q, cooldown %d", w.pools(), w.running.Load())
		}
	})
	t.Run("OPS-7/refused-pool-section-keeps-the-proxy-settings", func(t *testing.T) {
		w := newFileWorld(t, twoPools)
		w.write(t, strings.Replace(strings.Replace(twoPools, "members: [a]", "members: [ghost]", 1), "cooldown-ms: 7000", "cooldown-ms: 1234", 1))
		if err := w.f.reload("SIGHUP", false); err == nil || !strings.Contains(err.Error(), "ghost") {
			t.Fatalf("reload error %v", err)
		}
		doc := w.live.Document()
		if w.running.Load() != 7000 || w.pools() != "p" || len(doc.FileErrors) == 0 || !strings.Contains(doc.FileErrors[0], "pools.p.members") {
			t.Fatalf("a refused pools: section: cooldown %d, pools %q, settings' file errors %q", w.running.Load(), w.pools(), doc.FileErrors)
		}
	})
	t.Run("OPS-7/good-reload-applies-every-section-and-logs-what-changed", func(t *testing.T) {
		w := newFileWorld(t, twoPools)
		w.write(t, "channels:\n  a: {api: anthropic, base_url: http://127.0.0.1:9, api_key_env: A_KEY}\n  b: {api: openai, base_url: http://127.0.0.1:9, api_key_env: B_KEY}\npools:\n  q: {members: [a, b]}\nproxy:\n  cooldown-ms: 4321\n")
		if err := w.f.reload("SIGHUP", false); err != nil {
			t.Fatal(err)
		}
		if w.running.Load() != 4321 || w.pools() != "q" {
			t.Fatalf("cooldown %d, pools %q", w.running.Load(), w.pools())
		}
		if !strings.Contains(w.logs.String(), `changed="proxy: cooldown-ms; pools: +q -p; channels: +b"`) {
			t.Fatalf("the reload's log line does not say what changed:\n%s", w.logs)
		}
	})
	t.Run("OPS-7/own-write-back-is-not-reloaded-again-by-the-watch", func(t *testing.T) {
		w := newFileWorld(t, twoPools)
		if _, err := w.client.Set(context.Background(), map[string]any{settings.CooldownMS: 9000}); err != nil {
			t.Fatal(err)
		}
		before := w.logs.String()
		if err := w.f.reload("file watch", true); err != nil {
			t.Fatal(err)
		}
		if after := w.logs.String(); after != before {
			t.Fatalf("the watch reloaded this instance's own write:\n%s", strings.TrimPrefix(after, before))
		}
	})
	t.Run("OPS-7/editor-save-with-a-bad-proxy-section-is-refused-before-writing", func(t *testing.T) {
		w := newFileWorld(t, twoPools)
		w.f.mu.Lock()
		err := w.f.check([]byte(strings.Replace(twoPools, "cooldown-ms: 7000", "cooldown-ms: -5", 1)))
		w.f.mu.Unlock()
		if err == nil || !strings.Contains(err.Error(), "cooldown-ms") {
			t.Fatalf("check %v", err)
		}
	})
}

// TestFileWatch: an instance notices its config file changing, without
// SIGHUP, and applies it as SIGHUP would (SPEC OPS-7).
func TestFileWatch(t *testing.T) {
	t.Run("OPS-7/watch-applies-a-saved-file", func(t *testing.T) {
		w := newFileWorld(t, twoPools)
		stop := w.f.startWatch(20 * time.Millisecond)
		defer stop()
		// An editor that writes a new file and renames it over the old.
		tmp := w.path + ".tmp"
		if err := os.WriteFile(tmp, []byte(strings.NewReplacer("cooldown-ms: 7000", "cooldown-ms: 6000", "  p: {members: [a]}\n", "  p: {members: [a]}\n  p2: {members: [a]}\n").Replace(twoPools)), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, w.path); err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, 10*time.Second, "the watch to apply the file", func() bool { return w.running.Load() == 6000 && w.pools() == "p,p2" })
		if !strings.Contains(w.logs.String(), `by="file watch"`) {
			t.Fatalf("no reload line by the watch:\n%s", w.logs)
		}
	})
	t.Run("OPS-7/watch-reports-a-bad-save-once-and-applies-the-fix", func(t *testing.T) {
		w := newFileWorld(t, twoPools)
		stop := w.f.startWatch(20 * time.Millisecond)
		defer stop()
		w.write(t, strings.Replace(twoPools, "cooldown-ms: 7000", "cooldown-ms: x", 1))
		testkit.WaitFor(t, 10*time.Second, "the refusal in the document", func() bool { return len(w.live.Document().FileErrors) > 0 })
		w.write(t, strings.Replace(twoPools, "cooldown-ms: 7000", "cooldown-ms: 5000", 1))
		testkit.WaitFor(t, 10*time.Second, "the fixed file applied", func() bool {
			return w.running.Load() == 5000 && len(w.live.Document().FileErrors) == 0
		})
		if n := strings.Count(w.logs.String(), "proxy.cooldown-ms"); n != 1 {
			t.Fatalf("the bad save was reported %d times, want once:\n%s", n, w.logs)
		}
	})
}

// TestReadableKeyWarning: a channel key written in a file other users can
// read is named at start with the fix (SPEC POOL-15, OPS-7).
func TestReadableKeyWarning(t *testing.T) {
	for _, tc := range []struct {
		name string
		goos string
		mode os.FileMode
		want bool
	}{
		{"POOL-15/others-read-0644", "linux", 0o644, true},
		{"POOL-15/group-read-0640", "darwin", 0o640, true},
		{"POOL-15/owner-only-0600", "linux", 0o600, false},
		{"POOL-15/windows-acl-not-modes", "windows", 0o666, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := othersRead(tc.goos, tc.mode); got != tc.want {
				t.Fatalf("othersRead(%s, %v) = %v", tc.goos, tc.mode, got)
			}
		})
	}
	dir := t.TempDir()
	write := func(t *testing.T, text string, mode os.FileMode) (string, *config.Config) {
		t.Helper()
		path := filepath.Join(dir, fmt.Sprintf("c%o.yaml", mode))
		if err := os.WriteFile(path, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		cfg, err := config.LoadConfig(path, func(string) string { return "from-env" })
		if err != nil {
			t.Fatal(err)
		}
		return path, cfg
	}
	literal := "channels:\n  lit: {api: anthropic, base_url: http://127.0.0.1:9, api_key: sk-literal-key}\n  env: {api: anthropic, base_url: http://127.0.0.1:9, api_key_env: K}\n"
	t.Run("POOL-15/literal-key-in-a-readable-file-named-with-the-fix", func(t *testing.T) {
		path, cfg := write(t, literal, 0o644)
		w := readableKeyWarning(path, cfg)
		if runtime.GOOS == "windows" {
			// The access list decides (aclReaders); a temporary file's
			// is inherited from wherever the test runs.
			if w != "" && (!strings.Contains(w, "its access list lets") || !strings.Contains(w, "icacls") || strings.Contains(w, "sk-literal-key")) {
				t.Fatalf("warning %q", w)
			}
			return
		}
		for _, want := range []string{path, "channel(s) lit and", "mode 0644", "chmod 600 " + path, "api_key_env"} {
			if !strings.Contains(w, want) {
				t.Fatalf("warning %q lacks %q", w, want)
			}
		}
		if strings.Contains(w, "sk-literal-key") {
			t.Fatal("the warning repeats the key")
		}
	})
	t.Run("POOL-15/windows-access-list-read-by-everyone-users-or-authenticated-users", func(t *testing.T) {
		const me = "S-1-5-21-1-2-3-1001"
		allow := func(sid string, mask uint32) fileACE { return fileACE{allow: true, mask: mask, sid: sid} }
		for _, tc := range []struct {
			name    string
			nilDACL bool
			aces    []fileACE
			want    string
		}{
			{"owner-system-administrators-only", false, []fileACE{allow(me, 0x1f01ff), allow("S-1-5-18", 0x1f01ff), allow("S-1-5-32-544", 0x1f01ff)}, ""},
			{"users-read-execute", false, []fileACE{allow(me, 0x1f01ff), allow("S-1-5-32-545", 0x1200a9)}, "Users"},
			{"everyone-generic-read", false, []fileACE{allow("S-1-1-0", 0x80000000)}, "Everyone"},
			{"authenticated-users-modify", false, []fileACE{allow("S-1-5-11", 0x1301bf)}, "Authenticated Users"},
			{"everyone-and-users", false, []fileACE{allow("S-1-5-32-545", 0x1), allow("S-1-1-0", 0x1)}, "Everyone,Users"},
			{"users-may-only-read-attributes", false, []fileACE{allow("S-1-5-32-545", 0x80)}, ""},
			{"inherit-only-entry-is-for-children", false, []fileACE{{allow: true, inheritOnly: true, mask: 0x1, sid: "S-1-1-0"}}, ""},
			{"deny-before-allow-wins", false, []fileACE{{mask: 0x1, sid: "S-1-5-32-545"}, allow("S-1-5-32-545", 0x1200a9)}, ""},
			{"another-user-is-no-group", false, []fileACE{allow("S-1-5-21-1-2-3-1002", 0x1200a9)}, ""},
			{"no-access-list-lets-everyone", true, nil, "Everyone"},
		} {
			if got := strings.Join(aclReaders(tc.nilDACL, tc.aces), ","); got != tc.want {
				t.Errorf("%s: aclReaders = %q, want %q", tc.name, got, tc.want)
			}
		}
		if got := joinAnd([]string{"Everyone", "Users", "Authenticated Users"}); got != "Everyone, Users and Authenticated Users" {
			t.Errorf("joinAnd = %q", got)
		}
	})
	t.Run("POOL-15/private-file-or-keys-from-env-no-warning", func(t *testing.T) {
		// On Windows a mode is no access list: only Unix can make the
		// file private this way.
		if path, cfg := write(t, literal, 0o600); runtime.GOOS != "windows" && readableKeyWarning(path, cfg) != "" {
			t.Fatal("warning on a 0600 file")
		}
		if path, cfg := write(t, "channels:\n  env: {api: anthropic, base_url: http://127.0.0.1:9, api_key_env: K}\n", 0o604); readableKeyWarning(path, cfg) != "" {
			t.Fatal("warning on a file without a literal key")
		}
	})
}

// TestWriteBackOverAnotherWriter: two instances on one file, each writing
// its own change back, both end up running the file (SPEC OPS-7: every
// instance on a file follows it); a reload that only reads back a change
// this instance wrote is no new version.
func TestWriteBackOverAnotherWriter(t *testing.T) {
	t.Run("OPS-7/a-change-written-over-another-instances-change-runs-that-change-too", func(t *testing.T) {
		w := newFileWorld(t, twoPools)
		// Another instance's write-back: the file says 8000, not reloaded here yet.
		w.write(t, strings.Replace(twoPools, "7000", "8000", 1))
		if _, err := w.client.Set(context.Background(), map[string]any{settings.PrefTTLMS: 777}); err != nil {
			t.Fatal(err)
		}
		if err := w.f.reload("file watch", true); err != nil { // what the watch does next
			t.Fatal(err)
		}
		if got, disk := w.running.Load(), w.onDisk(t); got != 8000 || disk != 8000 {
			t.Fatalf("cooldown-ms runs %d, on disk %d; want the other instance's 8000 in both", got, disk)
		}
		if got := w.live.Document(); !strings.Contains(fmt.Sprint(got.Settings[settings.PrefTTLMS]), "777") {
			t.Fatalf("pref-ttl-ms = %v after the reload; want this instance's 777", got.Settings[settings.PrefTTLMS])
		}
	})
	t.Run("OPS-7/own-write-alone-is-not-reloaded-again", func(t *testing.T) {
		w := newFileWorld(t, twoPools)
		if _, err := w.client.Set(context.Background(), map[string]any{settings.CooldownMS: 9000}); err != nil {
			t.Fatal(err)
		}
		before := w.logs.String()
		if err := w.f.reload("file watch", true); err != nil {
			t.Fatal(err)
		}
		if after := w.logs.String(); after != before {
			t.Fatalf("the watch reloaded this instance's own write:\n%s", strings.TrimPrefix(after, before))
		}
	})
	t.Run("OPS-7/a-reload-reading-back-a-change-keeps-its-version", func(t *testing.T) {
		w := newFileWorld(t, twoPools)
		doc, err := w.client.Set(context.Background(), map[string]any{settings.CooldownMS: 9000})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.f.reload("SIGHUP", false); err != nil {
			t.Fatal(err)
		}
		if got := w.live.Document().Version; got != doc.Version {
			t.Fatalf("version %s after a reload that changed no value; want %s, the change's", got, doc.Version)
		}
		if w.running.Load() != 9000 || w.onDisk(t) != 9000 {
			t.Fatalf("cooldown-ms runs %d, on disk %d; want 9000", w.running.Load(), w.onDisk(t))
		}
	})
}

// TestChangeOverRefusedFile: a change is not written into a file whose
// last reload was refused, where it would put beside it on disk values
// that do not run (SPEC OPS-7: what a change answered 200 is what runs and
// what is on disk).
func TestChangeOverRefusedFile(t *testing.T) {
	t.Run("OPS-7/change-refused-409-while-the-file-holds-refused-values", func(t *testing.T) {
		w := newFileWorld(t, twoPools)
		refused := strings.Replace(twoPools, "cooldown-ms: 7000 # short", "cooldown-ms: 4000\n  cooldwn-ms: 1", 1)
		w.write(t, refused)
		if err := w.f.reload("SIGHUP", false); err == nil {
			t.Fatal("a file with an unknown proxy key was reloaded")
		}
		_, err := w.client.Set(context.Background(), map[string]any{settings.PrefTTLMS: 777})
		var re *settings.RemoteError
		if !errors.As(err, &re) || re.Status != http.StatusConflict {
			t.Fatalf("change over a refused file: %v; want a 409", err)
		}
		if data, _ := os.ReadFile(w.path); string(data) != refused {
			t.Fatalf("the refused change was written into the file:\n%s", data)
		}
		if got := w.running.Load(); got != 7000 {
			t.Fatalf("cooldown-ms runs %d; want 7000 (the refused file applies nothing)", got)
		}
		w.write(t, strings.Replace(twoPools, "7000", "4000", 1)) // fixed
		if err := w.f.reload("SIGHUP", false); err != nil {
			t.Fatal(err)
		}
		if _, err := w.client.Set(context.Background(), map[string]any{settings.PrefTTLMS: 777}); err != nil {
			t.Fatalf("change after the file was fixed: %v", err)
		}
		if w.running.Load() != 4000 || w.onDisk(t) != 4000 {
			t.Fatalf("cooldown-ms runs %d, on disk %d; want 4000", w.running.Load(), w.onDisk(t))
		}
	})
}

// TestStatusShowsRefusedProxyOnlyReload: a refused reload of a file of
// proxy: settings only, which has no pool state to say it, is shown by
// dual-proxy status with its place in the file and never its value (SPEC
// OPS-7, OPS-2).
func TestStatusShowsRefusedProxyOnlyReload(t *testing.T) {
	t.Run("OPS-7/status-says-a-proxy-only-file-was-not-reloaded", func(t *testing.T) {
		const proxyOnly = "proxy:\n  cooldown-ms: 7000\n"
		w := newFileWorld(t, proxyOnly)
		var b strings.Builder
		printFileErrors(context.Background(), &b, w.client.Addr, false)
		if b.Len() != 0 {
			t.Fatalf("a file that reloaded shows %q", b.String())
		}
		w.write(t, "proxy:\n  cooldown-ms: 7000\n  cooldwn-ms: 4321\n")
		if err := w.f.reload("SIGHUP", false); err == nil {
			t.Fatal("a misspelt key was reloaded")
		}
		printFileErrors(context.Background(), &b, w.client.Addr, false)
		out := b.String()
		if !strings.Contains(out, "config file: NOT RELOADED") || !strings.Contains(out, "cooldwn-ms") || !strings.Contains(out, w.path) || strings.Contains(out, "4321") {
			t.Fatalf("status after a refused reload:\n%s", out)
		}
	})
}

// TestStatusOfEveryInstanceShowsRefusedReload: dual-proxy status without
// --addr says a refused reload of an instance whose registry entry lists
// no pool (a file of proxy: settings only: the instance serves its pool
// endpoints, with no pool in them) exactly once, as with --addr, where the
// pool state's line says it (SPEC OPS-2, OPS-7).
func TestStatusOfEveryInstanceShowsRefusedReload(t *testing.T) {
	t.Run("OPS-2/status-of-every-instance-says-a-refused-reload-of-an-instance-without-pools", func(t *testing.T) {
		w := newFileWorld(t, "proxy:\n  cooldown-ms: 7000\n")
		mux := proxy.NewMux()
		srv, err := proxy.New(proxy.Config{Candidates: []candidate.Candidate{candidate.Direct}, Cooldown: 30 * time.Second, Handler: mux})
		if err != nil {
			t.Fatal(err)
		}
		mux.Attach(srv)
		mux.Handle(settings.Path, settings.Handler(w.live, fileWorldToken))
		mux.Handle("/pool/", w.pool)
		addr := testkit.Serve(t, srv)
		dir := t.TempDir()
		env := []string{"XDG_RUNTIME_DIR=" + dir, "LOCALAPPDATA=" + dir}
		reg, err := registry.Register(registryDir(env), registry.Entry{Program: "dual-proxy", Addr: addr}, "")
		if err != nil {
			t.Fatal(err)
		}
		defer reg.Remove()
		w.write(t, "proxy:\n  cooldown-ms: 7000\n  cooldwn-ms: 4321\n")
		if err := w.f.reload("SIGHUP", false); err == nil {
			t.Fatal("a misspelt key was reloaded")
		}
		for _, args := range [][]string{{"status"}, {"status", "--addr", addr}} {
			out, errOut, status := runCmd(t, DualProxy, env, args...)
			// The refusal is said once, by whichever line says it; another
			// instance on the default port says nothing of this file.
			if status != 0 || !strings.Contains(out, "NOT RELOADED") || strings.Count(out, `unknown setting "cooldwn-ms"`) != 1 || strings.Contains(out, "4321") {
				t.Fatalf("%v: status %d, stderr %q, want the refusal once and never the value:\n%s", args, status, errOut, out)
			}
		}
	})
}

// reloadLog reloads w's file as by and returns the log lines the reload
// wrote.
func (w *fileWorld) reloadLog(t *testing.T, by string) string {
	t.Helper()
	before := w.logs.String()
	if err := w.f.reload(by, false); err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(w.logs.String(), before)
}

// TestReloadNamesWhatItChanged: a reload's log line names exactly the
// keys whose running value it changed, compared with what runs, not with
// the file last reloaded: a change through the API written back, or a
// refused reload, moves what runs away from that file (SPEC OPS-7).
func TestReloadNamesWhatItChanged(t *testing.T) {
	t.Run("OPS-7/comment-after-an-api-change-names-no-key", func(t *testing.T) {
		w := newFileWorld(t, twoPools)
		if _, err := w.client.Set(context.Background(), map[string]any{settings.RaceDelayMS: 300}); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(w.path)
		if err != nil {
			t.Fatal(err)
		}
		w.write(t, "# a comment, nothing else\n"+string(data))
		if got := w.reloadLog(t, "SIGHUP"); !strings.Contains(got, "config file reloaded") || !strings.Contains(got, "changed=nothing") {
			t.Fatalf("a comment-only edit after an API change; want changed=nothing:\n%s", got)
		}
	})
	t.Run("OPS-7/same-value-restored-after-an-api-change-names-no-key", func(t *testing.T) {
		w := newFileWorld(t, twoPools)
		if _, err := w.client.Set(context.Background(), map[string]any{settings.CooldownMS: 9000}); err != nil {
			t.Fatal(err)
		}
		w.write(t, strings.Replace(twoPools, "cooldown-ms: 7000 # short", "cooldown-ms: 9000 # as it runs", 1))
		if got := w.reloadLog(t, "SIGHUP"); !strings.Contains(got, "changed=nothing") {
			t.Fatalf("the running cooldown-ms written in the file; want changed=nothing:\n%s", got)
		}
		if doc := w.live.Document(); doc.Sources[settings.CooldownMS] != settings.SourceFile {
			t.Fatalf("cooldown-ms source %s after the reload; want file", doc.Sources[settings.CooldownMS])
		}
	})
	t.Run("OPS-7/one-key-changed-is-the-only-key-named", func(t *testing.T) {
		w := newFileWorld(t, twoPools)
		if _, err := w.client.Set(context.Background(), map[string]any{settings.RaceDelayMS: 300}); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(w.path)
		if err != nil {
			t.Fatal(err)
		}
		w.write(t, "# colder\n"+strings.Replace(string(data), "cooldown-ms: 7000", "cooldown-ms: 6000", 1))
		if got := w.reloadLog(t, "SIGHUP"); !strings.Contains(got, `changed="proxy: cooldown-ms"`) || !strings.Contains(got, "keys=cooldown-ms ") {
			t.Fatalf("one key changed; want exactly it named:\n%s", got)
		}
		if w.running.Load() != 6000 {
			t.Fatalf("cooldown-ms runs %d; want 6000", w.running.Load())
		}
	})
	t.Run("OPS-7/state-back-to-the-running-store-after-a-refused-reload-is-no-change", func(t *testing.T) {
		w := newFileWorld(t, twoPools+"state: memory\n")
		shared := twoPools + "state: redis://127.0.0.1:1/0\n"
		w.write(t, strings.Replace(shared, "cooldown-ms: 7000", "cooldwn-ms: 7000", 1))
		if err := w.f.reload("SIGHUP", false); err == nil {
			t.Fatal("a file with an unknown proxy key was reloaded")
		}
		w.write(t, twoPools) // state: removed: memory, the store running
		if got := w.reloadLog(t, "SIGHUP"); strings.Contains(got, "state: changed") {
			t.Fatalf("the file's state: is the store running; want no warning:\n%s", got)
		}
	})
	t.Run("OPS-7/state-changed-is-said-once-and-not-when-it-comes-back", func(t *testing.T) {
		w := newFileWorld(t, twoPools)
		shared := twoPools + "state: redis://127.0.0.1:1/0\n"
		w.write(t, shared)
		if got := w.reloadLog(t, "SIGHUP"); !strings.Contains(got, "state: changed") {
			t.Fatalf("the file's state: moved off the store running; want the warning:\n%s", got)
		}
		w.write(t, "# a comment\n"+shared)
		if got := w.reloadLog(t, "SIGHUP"); strings.Contains(got, "state: changed") {
			t.Fatalf("a comment-only edit; want no state warning:\n%s", got)
		}
		w.write(t, strings.Replace(twoPools, "cooldown-ms: 7000", "cooldwn-ms: 7000", 1))
		if err := w.f.reload("SIGHUP", false); err == nil {
			t.Fatal("a file with an unknown proxy key was reloaded")
		}
		w.write(t, twoPools)
		if got := w.reloadLog(t, "SIGHUP"); strings.Contains(got, "state: changed") {
			t.Fatalf("the file's state: is back to the store running; want no warning:\n%s", got)
		}
	})
}
