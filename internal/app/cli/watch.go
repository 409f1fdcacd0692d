package cli

import (
	"context"
	"os"
	"time"
)

// The file watch: every instance that reads a config file
// follows it, so a save on one instance (its settings' write-back, its
// pool editor) or in a text editor reaches every instance on the file,
// and Windows, which has no SIGHUP, reloads too. The watch is a stat poll
// (size, modification time, the file's identity: inode and device on
// Unix, volume and index on Windows; a rename over the file is a new
// identity): it costs one stat every watchEvery and works on every OS and
// file system, network ones included, where change notifications are not
// delivered. A change is read once the file has stopped changing for
// watchSettle (an editor writes in steps), and is the same transaction
// as SIGHUP's, except that a content already seen (this instance's own
// write, a touch) is not reloaded again.

const (
	// watchEvery is how often the file is looked at: a save reaches every
	// instance within about this long.
	watchEvery = 2 * time.Second
	// watchSettle is how long a changed file must stay the same before it
	// is read.
	watchSettle = 250 * time.Millisecond
	// watchSettleRounds bounds the waits for a file that keeps changing;
	// it is read after them anyway.
	watchSettleRounds = 8
)

// stamp is what one stat of the file says.
type stamp struct {
	fi os.FileInfo // nil: missing or unreadable
}

// statFile stats path (following a symlink, so a link moved to another
// target is a change too).
func statFile(path string) stamp {
	fi, err := os.Stat(path)
	if err != nil {
		return stamp{}
	}
	return stamp{fi: fi}
}

// same reports whether a and b show the same file, unchanged.
func (a stamp) same(b stamp) bool {
	if a.fi == nil || b.fi == nil {
		return a.fi == nil && b.fi == nil
	}
	return os.SameFile(a.fi, b.fi) && a.fi.Size() == b.fi.Size() && a.fi.ModTime().Equal(b.fi.ModTime())
}

// recent reports whether the file was modified within d of now: a file
// system with coarse timestamps (1 or 2 s) may show a second write of the
// same size with the same time, so such a file is read again (its
// content decides).
func (a stamp) recent(now time.Time, d time.Duration) bool {
	return a.fi != nil && now.Sub(a.fi.ModTime()) < d
}

// startWatch watches f's file every `every` until the returned stop is
// called (stop waits for the watch to end). Without a file it watches
// nothing.
func (f *configFile) startWatch(every time.Duration) (stop func()) {
	if f.s.ConfigPath == "" {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.watch(ctx, every)
	}()
	return func() {
		cancel()
		<-done
	}
}

// watch polls the file until ctx ends, reloading it (by "file watch")
// after each change that settled (SPEC OPS-7). The first look reads the file (its
// content decides): a change made while the instance started is not
// missed.
func (f *configFile) watch(ctx context.Context, every time.Duration) {
	path := f.s.ConfigPath
	var last stamp
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		cur := statFile(path)
		if cur.same(last) && !cur.recent(time.Now(), 2*every) {
			continue
		}
		for range watchSettleRounds {
			select {
			case <-ctx.Done():
				return
			case <-time.After(watchSettle):
			}
			next := statFile(path)
			if next.same(cur) {
				break
			}
			cur = next
		}
		last = cur
		_ = f.reload("file watch", true) // a refusal is logged and shown by f
	}
}
