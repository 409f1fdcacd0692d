// Package registry records the running dual-proxy instances of one user so
// `dual-proxy status` and `dual-proxy pool test` find them without an
// address or a token typed by hand.
//
// Each instance writes PID.json (0600) into a per-user directory (see DirFor), and,
// when it serves a pool behind a token, PID.token (0600) beside it, and the control
// token of its live settings in PID.control (0600). The files are removed when the
// instance exits; entries whose process is gone (killed with SIGKILL, machine
// crash) are skipped and deleted by List. The directory is created 0700 and, on
// Unix, refused when another user owns it or can read it, so a token never lands
// where others can read it.
//
// What each OS guarantees: Linux with systemd gives a per-user
// $XDG_RUNTIME_DIR (0700, emptied at logout); macOS gives a per-user
// $TMPDIR; elsewhere the directory is under the temporary directory with the
// user id in its name, and its owner and mode are checked. On Windows it is
// under %LocalAppData%, which only the user can read, and its owner and
// access list are checked (aclVerdict). An entry counts only while its pid
// runs with the creation stamp it recorded.
package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Entry is one running instance.
type Entry struct {
	// Program is "dual-proxy", "dual-proxy run" or "claude-dual-proxy".
	Program string `json:"program"`
	// PID is the instance's process id.
	PID int `json:"pid"`
	// Addr is the listener, "127.0.0.1:7896".
	Addr string `json:"addr"`
	// Command is the child's executable (launchers only; never its
	// arguments, which may hold prompts).
	Command string `json:"command,omitempty"`
	// Pool is the pool the child uses (launchers with --pool), or "".
	Pool string `json:"pool,omitempty"`
	// Pools are the pools the instance serves.
	Pools []string `json:"pools,omitempty"`
	// LogFile is the launcher's log file, or "" (the standalone proxy logs
	// to stderr).
	LogFile string `json:"log_file,omitempty"`
	// Started is when the instance registered.
	Started time.Time `json:"started"`
	// HasToken is true when PID.token holds the token its pool endpoints
	// require.
	HasToken bool `json:"has_token,omitempty"`
	// ProcStart is the process's creation stamp (procStart: Linux clock
	// ticks after boot, macOS µs since the epoch, Windows 100 ns units
	// since 1601), 0 where the OS gives none. List trusts an entry only
	// while pid PID is a process of that stamp: a pid
	// reused after a crash is another process.
	ProcStart int64 `json:"proc_start,omitempty"`

	dir string
}

// Registration is a written entry; Remove deletes it.
type Registration struct {
	json, token string
	control     string // PID.control (control.go), "" before SetControlToken

	mu      sync.Mutex
	entry   Entry // as written, for SetPools
	removed bool  // by Remove: SetPools writes nothing more
}

// Register writes e (and token, when not empty) into dir, creating dir
// 0700. e.PID defaults to this process. Errors name the path.
func Register(dir string, e Entry, token string) (*Registration, error) {
	if err := ensureDir(dir); err != nil {
		return nil, err
	}
	if e.PID == 0 {
		e.PID = os.Getpid()
	}
	if e.Started.IsZero() {
		e.Started = time.Now()
	}
	if e.ProcStart == 0 {
		e.ProcStart, _ = procStart(e.PID)
	}
	base := filepath.Join(dir, strconv.Itoa(e.PID))
	r := &Registration{json: base + ".json"}
	if token != "" {
		r.token = base + ".token"
		if err := writeFile(r.token, []byte(token)); err != nil {
			return nil, err
		}
		e.HasToken = true
	}
	r.entry = e
	if err := r.write(); err != nil {
		r.Remove()
		return nil, err
	}
	return r, nil
}

// write writes r.entry to PID.json (the caller holds r.mu, or r is not
// shared yet).
func (r *Registration) write() error {
	data, err := json.MarshalIndent(r.entry, "", "  ")
	if err != nil {
		return err
	}
	return writeFile(r.json, append(data, '\n'))
}

// SetPools rewrites the entry with pools as the pools the instance serves,
// when they changed: a reload (SIGHUP, the pool editor's save) that adds
// or removes a pool is what `dual-proxy pool test` and `status` find
// afterwards. Safe for concurrent use and on nil; the error
// names the path.
func (r *Registration) SetPools(pools []string) error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.removed || slices.Equal(r.entry.Pools, pools) {
		return nil
	}
	r.entry.Pools = slices.Clone(pools)
	return r.write()
}

// Remove deletes the entry's files. It is safe to call more than once and
// on nil.
func (r *Registration) Remove() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.removed = true
	os.Remove(r.json)
	if r.token != "" {
		os.Remove(r.token)
	}
	if r.control != "" {
		os.Remove(r.control)
	}
}

// List returns the live entries in dir, oldest first. Entries whose process
// no longer runs, or whose pid is now a process of another creation time
// (ProcStart), are deleted; an entry without a stamp where this OS has one
// is skipped and kept. A missing dir is no error (nothing runs). A
// dir that someone else could have written to (a symlink, another user's,
// group- or world-writable) is an error and none of its entries is read:
// callers send an entry's token to the entry's address.
func List(dir string) ([]Entry, error) {
	names, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if err := checkTrusted(dir); err != nil {
		return nil, fmt.Errorf("registry %s not read: %w", dir, err)
	}
	var out []Entry
	for _, n := range names {
		if !strings.HasSuffix(n.Name(), ".json") {
			removeOrphan(dir, n.Name())
			continue
		}
		path := filepath.Join(dir, n.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var e Entry
		if json.Unmarshal(data, &e) != nil || e.PID <= 0 {
			continue
		}
		switch judgeEntry(e.ProcStart, e.PID) {
		case entryStale:
			os.Remove(path)
			os.Remove(strings.TrimSuffix(path, ".json") + ".token")
			os.Remove(strings.TrimSuffix(path, ".json") + controlSuffix)
			continue
		case entryUnverified:
			continue
		}
		e.dir = dir
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out, nil
}

// orphanSuffixes are the other files of an entry: its tokens, and the
// temporary files writeFile renames into place. A process killed between
// writing one and its rename (or a full disk) left them behind, and they
// piled up in the user's registry (27 in a day of test runs here).
var orphanSuffixes = []string{".token", ".json.tmp", ".token.tmp", controlSuffix, controlSuffix + ".tmp"}

// removeOrphan deletes name in dir when it is one of orphanSuffixes of a
// pid that no longer runs (a live pid's files may be mid-registration).
func removeOrphan(dir, name string) {
	pid, rest, ok := strings.Cut(name, ".")
	if !ok || !slices.Contains(orphanSuffixes, "."+rest) {
		return
	}
	if n, err := strconv.Atoi(pid); err == nil && n > 0 && !alive(n) {
		os.Remove(filepath.Join(dir, name))
	}
}

// Token reads e's pool token ("" when it has none). The token file must be
// a regular file of this user; a symlink is refused.
func (e Entry) Token() (string, error) {
	if !e.HasToken || e.dir == "" {
		return "", nil
	}
	b, err := readOwnFile(filepath.Join(e.dir, strconv.Itoa(e.PID)+".token"))
	if err != nil {
		return "", fmt.Errorf("pool token of pid %d: %w", e.PID, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// readOwnFile reads path when it is a regular file of this user, never
// through a symlink (a token file must not stand for another file of ours).
func readOwnFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if ofi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || !os.SameFile(fi, ofi) || !ownedByMe(fi) {
		return nil, errors.New("not a regular file of this user")
	}
	return io.ReadAll(io.LimitReader(f, 4096))
}

// writeFile writes data to path (0600) through a temporary file and a
// rename, so a reader never sees half an entry.
func writeFile(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		os.Remove(tmp) // a full disk left an empty PID.json.tmp behind
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// ensureDir creates dir 0700 and checks that only this user can use it.
func ensureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("registry %s: %w", dir, err)
	}
	if err := checkPrivate(dir); err != nil {
		return fmt.Errorf("registry %s: %w", dir, err)
	}
	return nil
}
