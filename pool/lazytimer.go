package pool

import (
	"math"
	"sync/atomic"
	"time"
)

// clockBase is the origin of lazyTimer's monotonic deadlines.
var clockBase = time.Now()

// monoNow is the monotonic time since clockBase.
func monoNow() time.Duration { return time.Since(clockBase) }

// lazyTimer is a time.AfterFunc whose deadline push moves later with one
// clock read and an atomic store: a relayed stream moves its ping and idle
// deadlines after every event, and a time.Timer.Reset per deadline per
// event was a timer-heap operation each. When the timer fires
// before the deadline it is set again for the time left, so fn runs when
// the last pushed deadline passes, as if every push had been a Reset.
type lazyTimer struct {
	t       atomic.Pointer[time.Timer]
	due     atomic.Int64 // deadline: monoNow() units
	stopped atomic.Bool
}

// afterFuncLazy runs fn(l) once d has passed since the last push (or
// since now, without one), in its own goroutine as time.AfterFunc does.
func afterFuncLazy(d time.Duration, fn func(l *lazyTimer)) *lazyTimer {
	l := &lazyTimer{}
	l.due.Store(int64(monoNow() + d))
	t := time.AfterFunc(math.MaxInt64, func() {
		if left := time.Duration(l.due.Load()) - monoNow(); left > 0 {
			l.rearm(left) // pushed since it was set
			return
		}
		fn(l)
	})
	l.t.Store(t)
	t.Reset(d)
	return l
}

// push moves the deadline to d from now (effective while the timer has
// not fired; fn may set it again with again).
func (l *lazyTimer) push(d time.Duration) { l.pushFrom(monoNow(), d) }

// pushFrom is push with now read by the caller (one clock read for
// several deadlines).
func (l *lazyTimer) pushFrom(now, d time.Duration) { l.due.Store(int64(now + d)) }

// again sets the deadline to d from now and starts the timer again: for fn
// that wants to run once more.
func (l *lazyTimer) again(d time.Duration) {
	l.push(d)
	l.rearm(d)
}

func (l *lazyTimer) rearm(d time.Duration) {
	t := l.t.Load()
	t.Reset(d)
	if l.stopped.Load() {
		t.Stop() // stop ran meanwhile: either its Stop or this one wins
	}
}

// stop stops the timer: once it returns, the timer is not set again.
// Like time.Timer.Stop it does not wait for an fn already running.
func (l *lazyTimer) stop() {
	l.stopped.Store(true)
	l.t.Load().Stop()
}
