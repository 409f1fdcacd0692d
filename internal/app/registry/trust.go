package registry

import "os"

// entryVerdict is what List makes of an entry.
type entryVerdict int

const (
	// entryLive: the entry's process runs (and has the recorded creation stamp).
	entryLive entryVerdict = iota
	// entryStale: the process is gone, or its pid now names another process: the entry's
	// files are deleted.
	entryStale
	// entryUnverified: the pid runs but the entry cannot be matched to it (no stamp recorded
	// where this OS has one, or the stamp unreadable): skipped, its files kept.
	entryUnverified
)

// judgeEntry reads pid's liveness and creation stamp and judges an entry that recorded
// recorded (0: none) for it; see trustVerdict.
func judgeEntry(recorded int64, pid int) entryVerdict {
	running := alive(pid)
	current, err := procStart(pid)
	_, selfErr := procStart(os.Getpid())
	return trustVerdict(recorded, running, current, err == nil, selfErr == nil)
}

// trustVerdict decides an entry's fate from the stamp it recorded (0: none), whether its pid
// runs, the pid's current stamp (when readable) and whether this OS gives stamps at all
// (stamps: this process's own is readable). A pure function, tested on every OS. An entry is
// trusted only when the stamps match; without stamps on this OS, by pid alone.
func trustVerdict(recorded int64, running bool, current int64, readable, stamps bool) entryVerdict {
	switch {
	case !running:
		return entryStale
	case !stamps:
		return entryLive
	case !readable:
		return entryUnverified
	case recorded == 0:
		return entryUnverified
	case recorded != current:
		return entryStale
	}
	return entryLive
}
