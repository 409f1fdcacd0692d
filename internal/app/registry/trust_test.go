package registry

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestTrustVerdict(t *testing.T) {
	for _, tc := range []struct {
		name              string
		recorded, current int64
		running, readable bool
		stamps            bool
		want              entryVerdict
	}{
		{"same-process-trusted", 42, 42, true, true, true, entryLive},
		{"reused-pid-is-stale", 42, 43, true, true, true, entryStale},
		{"gone-is-stale", 42, 0, false, false, true, entryStale},
		{"no-stamp-recorded-is-unverified", 0, 42, true, true, true, entryUnverified},
		{"stamp-unreadable-is-unverified", 42, 0, true, false, true, entryUnverified},
		{"os-without-stamps-trusts-the-pid", 0, 0, true, false, false, entryLive},
		{"os-without-stamps-gone-is-stale", 0, 0, false, false, false, entryStale},
	} {
		t.Run("PLAT-5/OPS-6/"+tc.name, func(t *testing.T) {
			if got := trustVerdict(tc.recorded, tc.running, tc.current, tc.readable, tc.stamps); got != tc.want {
				t.Fatalf("got %d want %d", got, tc.want)
			}
		})
	}
}

// TestProcStart runs on Linux, macOS builds and Windows (Wine): the creation stamp of this OS is
// read and tells a reused pid from the process that registered.
func TestProcStart(t *testing.T) {
	self, err := procStart(os.Getpid())
	if err != nil || self == 0 {
		t.Fatalf("own creation stamp: %d %v", self, err)
	}
	t.Run("PLAT-5/stamp-is-stable-and-per-process", func(t *testing.T) {
		if again, err := procStart(os.Getpid()); again != self || err != nil {
			t.Fatalf("read twice: %d then %d (%v)", self, again, err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), holdEnv+"=1")
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		child, err := procStart(cmd.Process.Pid)
		stdin.Close()
		cmd.Wait()
		if err != nil || child == self {
			t.Fatalf("child's stamp %d (%v), ours %d: want a readable, different one", child, err, self)
		}
		if _, err := procStart(cmd.Process.Pid); err == nil {
			t.Fatal("a stamp for an exited process")
		}
	})
	plant := func(t *testing.T, dir string, stamp int64) string {
		t.Helper()
		if err := ensureDir(dir); err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(Entry{Program: "dual-proxy", PID: os.Getpid(), Addr: "127.0.0.1:9", ProcStart: stamp, HasToken: true})
		base := filepath.Join(dir, itoa(os.Getpid()))
		if err := writeFile(base+".json", data); err != nil {
			t.Fatal(err)
		}
		if err := writeFile(base+".token", []byte("tok")); err != nil {
			t.Fatal(err)
		}
		return base
	}
	t.Run("PLAT-5/OPS-6/an-entry-of-a-reused-pid-is-dropped-with-its-token", func(t *testing.T) {
		// After a crash the pid went to another process (here: ours, with another stamp):
		// status must not send the token to whatever listens on the entry's port now.
		dir := filepath.Join(t.TempDir(), "reg")
		base := plant(t, dir, self+1)
		if es, err := List(dir); err != nil || len(es) != 0 {
			t.Fatalf("listed %+v (%v): an entry of another process's creation time", es, err)
		}
		for _, f := range []string{base + ".json", base + ".token"} {
			if _, err := os.Stat(f); !os.IsNotExist(err) {
				t.Fatalf("%s kept: %v", f, err)
			}
		}
	})
	t.Run("PLAT-5/OPS-6/an-entry-without-a-stamp-is-skipped-and-kept", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "reg")
		base := plant(t, dir, 0)
		if es, err := List(dir); err != nil || len(es) != 0 {
			t.Fatalf("listed %+v (%v): an entry that cannot be matched to its process", es, err)
		}
		if _, err := os.Stat(base + ".json"); err != nil {
			t.Fatalf("entry deleted: %v", err)
		}
	})
	t.Run("PLAT-5/OPS-6/register-records-the-stamp", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "reg")
		r, err := Register(dir, Entry{Program: "dual-proxy", Addr: "127.0.0.1:9"}, "")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Remove()
		es, err := List(dir)
		if err != nil || len(es) != 1 || es[0].ProcStart != self {
			t.Fatalf("%+v %v, want one entry with stamp %d", es, err, self)
		}
	})
}
