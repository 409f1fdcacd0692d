//go:build linux

package signals

import (
	"os"
	"strconv"
	"testing"
)

func TestParseProcStat(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want procStat
		ok   bool
	}{
		{"SIG-2/plain", "123 (sleep) S 1 123 100 0 -1 4194560 ...", procStat{123, 'S', 1, 123, 100}, true},
		{"SIG-2/zombie", "77 (sh) Z 50 60 60 0 -1", procStat{77, 'Z', 50, 60, 60}, true},
		{"SIG-2/comm-with-space-and-parens", "9 (a ) b) (c) R 2 3 4 5", procStat{9, 'R', 2, 3, 4}, true},
		{"SIG-2/empty", "", procStat{}, false},
		{"SIG-2/no-comm", "12 S 1 2 3", procStat{}, false},
		{"SIG-2/short", "12 (x) S 1 2", procStat{}, false},
		{"SIG-2/bad-pid", "x (y) S 1 2 3", procStat{}, false},
		{"SIG-2/bad-field", "1 (y) S 1 two 3", procStat{}, false},
		{"SIG-2/long-state", "1 (y) SS 1 2 3", procStat{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := parseProcStat([]byte(c.in))
			if ok != c.ok || got != c.want {
				t.Fatalf("parseProcStat(%q) = %+v, %v; want %+v, %v", c.in, got, ok, c.want, c.ok)
			}
		})
	}
	t.Run("SIG-2/self", func(t *testing.T) {
		b, err := os.ReadFile("/proc/self/stat")
		if err != nil {
			t.Skip("no /proc")
		}
		st, ok := parseProcStat(b)
		if !ok || st.pid != os.Getpid() || st.ppid != os.Getppid() {
			t.Fatalf("parseProcStat(/proc/self/stat) = %+v, %v; pid %d ppid %d", st, ok, os.Getpid(), os.Getppid())
		}
	})
}

func FuzzParseProcStat(f *testing.F) {
	for _, s := range []string{"123 (sleep) S 1 123 100 0", "9 (a ) b) (c) R 2 3 4 5", "", "(", ")", "1 () Z 0 0 0", "1 (x) S -1 -2 -3"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		st, ok := parseProcStat(b)
		if !ok {
			return
		}
		if st.pid <= 0 {
			t.Fatalf("accepted pid %d", st.pid)
		}
		// The fields after comm must round-trip through their decimal form.
		for _, v := range []int{st.ppid, st.pgrp, st.session} {
			if _, err := strconv.Atoi(strconv.Itoa(v)); err != nil {
				t.Fatal(err)
			}
		}
	})
}
