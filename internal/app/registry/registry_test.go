package registry

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

func TestDirFor(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, tc := range []struct {
		name, goos string
		env        map[string]string
		want       string
	}{
		{"linux-xdg-runtime", "linux", map[string]string{"XDG_RUNTIME_DIR": "/run/user/1000"}, "/run/user/1000/dual-proxy"},
		{"linux-relative-xdg-ignored", "linux", map[string]string{"XDG_RUNTIME_DIR": "run"}, "/tmp/dual-proxy-1000"},
		{"linux-no-xdg", "linux", nil, "/tmp/dual-proxy-1000"},
		{"darwin", "darwin", nil, "/tmp/dual-proxy-1000"},
		{"windows-localappdata", "windows", map[string]string{"LOCALAPPDATA": `C:\Users\u\AppData\Local\`}, `C:\Users\u\AppData\Local\dual-proxy\run`},
		{"windows-temp", "windows", nil, `/tmp\dual-proxy`},
	} {
		t.Run("OPS-6/dir/"+tc.name, func(t *testing.T) {
			if got := DirFor(tc.goos, env(tc.env), "/tmp", 1000); got != tc.want {
				t.Fatalf("got %q want %q", got, tc.want)
			}
		})
	}
}

func TestRegisterList(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "reg")
	t.Run("OPS-6/register-list-remove", func(t *testing.T) {
		r, err := Register(dir, Entry{Program: "claude-dual-proxy", Addr: "127.0.0.1:7896", Pool: "p", LogFile: "/l"}, "dpx-tok")
		if err != nil {
			t.Fatal(err)
		}
		if runtime.GOOS != "windows" {
			for _, f := range []string{dir, filepath.Join(dir, itoa(os.Getpid())+".token"), filepath.Join(dir, itoa(os.Getpid())+".json")} {
				fi, err := os.Stat(f)
				if err != nil || fi.Mode().Perm()&0o077 != 0 {
					t.Fatalf("%s: %v %v (want no group/other bits)", f, fi.Mode(), err)
				}
			}
		}
		es, err := List(dir)
		if err != nil || len(es) != 1 || es[0].PID != os.Getpid() || es[0].Pool != "p" || es[0].Addr != "127.0.0.1:7896" {
			t.Fatalf("%+v %v", es, err)
		}
		if tok, err := es[0].Token(); tok != "dpx-tok" || err != nil {
			t.Fatalf("token %q %v", tok, err)
		}
		r.Remove()
		if es, _ := List(dir); len(es) != 0 {
			t.Fatalf("still listed after Remove: %+v", es)
		}
	})
	t.Run("OPS-6/stale-entry-of-dead-process-dropped", func(t *testing.T) {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		dead := cmd.Process.Pid
		if _, err := Register(dir, Entry{Program: "dual-proxy run", PID: dead, Addr: "127.0.0.1:1", Started: time.Now()}, "x"); err != nil {
			t.Fatal(err)
		}
		if es, _ := List(dir); len(es) != 0 {
			t.Fatalf("dead pid %d listed: %+v", dead, es)
		}
		if _, err := os.Stat(filepath.Join(dir, itoa(dead)+".json")); !os.IsNotExist(err) {
			t.Fatalf("stale entry not removed: %v", err)
		}
		if _, err := os.Stat(filepath.Join(dir, itoa(dead)+".token")); !os.IsNotExist(err) {
			t.Fatalf("stale token not removed: %v", err)
		}
	})
	t.Run("OPS-6/leftovers-of-dead-processes-removed", func(t *testing.T) {
		// A process killed between writing a temporary file and its
		// rename, or between its token and its entry, left files that
		// piled up in the user's registry; a live pid's stay (it may be
		// registering right now), and so do files that are not an entry's.
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		dead, live := itoa(cmd.Process.Pid), itoa(os.Getpid())
		gone := []string{dead + ".json.tmp", dead + ".token.tmp", dead + ".token"}
		kept := []string{live + ".json.tmp", live + ".token", "notes.txt", dead + ".bak"}
		for _, f := range append(append([]string(nil), gone...), kept...) {
			if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := List(dir); err != nil {
			t.Fatal(err)
		}
		for _, f := range gone {
			if _, err := os.Stat(filepath.Join(dir, f)); !os.IsNotExist(err) {
				t.Errorf("%s of a dead pid left: %v", f, err)
			}
		}
		for _, f := range kept {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Errorf("%s removed: %v", f, err)
			}
			os.Remove(filepath.Join(dir, f))
		}
	})
	t.Run("OPS-6/missing-dir-is-empty", func(t *testing.T) {
		if es, err := List(filepath.Join(dir, "nope")); err != nil || len(es) != 0 {
			t.Fatalf("%v %v", es, err)
		}
	})
	if runtime.GOOS != "windows" {
		t.Run("OPS-6/open-dir-tightened", func(t *testing.T) {
			open := filepath.Join(t.TempDir(), "open")
			if err := os.Mkdir(open, 0o755); err != nil {
				t.Fatal(err)
			}
			os.Chmod(open, 0o755)
			if _, err := Register(open, Entry{Program: "dual-proxy", Addr: "127.0.0.1:2"}, ""); err != nil {
				t.Fatal(err)
			}
			if fi, _ := os.Stat(open); fi.Mode().Perm() != 0o700 {
				t.Fatalf("mode %v", fi.Mode())
			}
		})
		t.Run("OPS-6/symlink-dir-refused", func(t *testing.T) {
			base := t.TempDir()
			link := filepath.Join(base, "link")
			if err := os.Symlink(t.TempDir(), link); err != nil {
				t.Fatal(err)
			}
			if _, err := Register(link, Entry{Program: "dual-proxy", Addr: "127.0.0.1:2"}, "secret"); err == nil {
				t.Fatal("registered into a symlinked directory")
			}
		})
	}
}

func itoa(n int) string { return fmt.Sprint(n) }

// TestSetPools: a reload that changes the pools an instance serves
// rewrites its entry, so List (and `dual-proxy pool test`) sees the new
// list; once removed, the entry is not written back (SPEC OPS-6).
func TestSetPools(t *testing.T) {
	t.Run("OPS-6/reload-rewrites-the-pool-list", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "reg")
		r, err := Register(dir, Entry{Program: "dual-proxy", Addr: "127.0.0.1:7898", Pools: []string{"first"}}, "tok")
		if err != nil {
			t.Fatal(err)
		}
		if err := r.SetPools([]string{"first", "third"}); err != nil {
			t.Fatal(err)
		}
		es, err := List(dir)
		if err != nil || len(es) != 1 || fmt.Sprint(es[0].Pools) != "[first third]" || !es[0].HasToken || es[0].Addr != "127.0.0.1:7898" {
			t.Fatalf("after SetPools: %+v %v", es, err)
		}
		r.Remove()
		if err := r.SetPools([]string{"fourth"}); err != nil {
			t.Fatal(err)
		}
		if es, _ := List(dir); len(es) != 0 {
			t.Fatalf("SetPools after Remove wrote the entry back: %+v", es)
		}
		var none *Registration
		if err := none.SetPools([]string{"x"}); err != nil {
			t.Fatal(err)
		}
	})
}
