package pool

import (
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

// One goroutine per stream. The serving goroutine reads the
// member's events itself, so an event costs one wake-up, not a reader
// goroutine's plus a hand-over to the relay loop. What used to be select
// cases beside the read are timers: first_output_timeout_ms, the idle
// timeout and the bounded waits (nextError, drainEnd, forwardTrailer)
// cancel the attempt's context, which ends a blocked body read (net/http
// and the proxy's Transport tie body reads to the request context); the
// client gone cancels it through the request's context (POOL-9). Pings and
// pre-commit keep-alives are written by a ticker under the call's write
// lock (wmu), so they never interleave with an event's bytes.

// memberStream is one attempt's event stream, read on the serving goroutine.
type memberStream struct {
	rd     *wirefmt.SSEReader
	cancel context.CancelFunc
	// closeBody closes the body once; watch closes it readerExitWait after
	// the attempt's context ended, for a RoundTripper whose body read
	// ignores the context (concurrent Close is legal for net/http).
	closeBody func()
	watch     func() bool
	exit      atomic.Pointer[time.Timer]
}

func newMemberStream(ctx context.Context, cancel context.CancelFunc, src io.Reader, body io.Closer) *memberStream {
	u := &memberStream{rd: wirefmt.NewSSEReader(src), cancel: cancel, closeBody: sync.OnceFunc(func() { _ = body.Close() })}
	u.watch = context.AfterFunc(ctx, func() { u.exit.Store(time.AfterFunc(readerExitWait, u.closeBody)) })
	return u
}

// next reads the next event.
func (u *memberStream) next() (wirefmt.SSEEvent, error) { return u.rd.Next() }

// nextWithin reads the next event, ending the attempt when none came within
// d (the caller ends it then anyway).
func (u *memberStream) nextWithin(d time.Duration) (wirefmt.SSEEvent, error) {
	t := time.AfterFunc(d, u.cancel)
	defer t.Stop()
	return u.rd.Next()
}

// close ends the attempt and closes the body: nothing reads it any more,
// so the reader's buffer goes to the next stream.
func (u *memberStream) close() {
	u.watch()
	u.cancel()
	if t := u.exit.Load(); t != nil {
		t.Stop()
	}
	u.closeBody()
	u.rd.Release()
}

// drainEnd reads on for at most endDrainWait to the body's end, discarding
// anything after the end event, so the connection goes back to the
// keep-alive pool instead of being cut by the cancel (SPEC POOL-17); the
// end is normally already in flight.
func (u *memberStream) drainEnd() {
	t := time.AfterFunc(endDrainWait, u.cancel)
	defer t.Stop()
	for {
		if _, err := u.rd.Next(); err != nil {
			return
		}
	}
}

// ticker runs fn on a timer under the call's write lock, then again after
// the wait fn returns while its ok is true. After stop returns fn never
// runs again (stop takes the same lock), so nothing is written to the
// client once the serving goroutine has moved on.
type ticker struct {
	c   *call
	t   *lazyTimer
	off bool // under c.wmu
}

func (c *call) startTicker(first time.Duration, fn func() (next time.Duration, ok bool)) *ticker {
	k := &ticker{c: c}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	k.t = afterFuncLazy(first, func(*lazyTimer) {
		c.wmu.Lock()
		defer c.wmu.Unlock()
		if k.off {
			return
		}
		if d, ok := fn(); ok {
			k.t.again(d)
		}
	})
	return k
}

// reset sets the ticker's next run d after now (monoNow; an atomic store:
// the relay calls it after every event).
func (k *ticker) reset(now, d time.Duration) { k.t.pushFrom(now, d) }

// stop ends the ticker (a nil ticker is stopped).
func (k *ticker) stop() {
	if k == nil {
		return
	}
	k.t.stop()
	k.c.wmu.Lock()
	k.off = true
	k.c.wmu.Unlock()
}

// clientStream is the call's side of the client's connection: the
// response writer, its ResponseController (made on the first flush), and
// wmu, which orders the client writes of the serving goroutine and of a
// ticker (keep-alives, pings); unflushed: bytes were written and not
// flushed yet (send). The commit point and the relay after it (SPEC
// POOL-7) write through it.
type clientStream struct {
	w         http.ResponseWriter
	rc        *http.ResponseController
	wmu       sync.Mutex
	unflushed bool
}

// send writes b to the client under the write lock; flush false leaves it
// in the response's buffer because the next event is already here
// (EventBuffered): the flush after that one carries both.
func (c *clientStream) send(b []byte, flush bool) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if len(b) > 0 {
		if _, err := c.w.Write(b); err != nil {
			return err
		}
		c.unflushed = true
	}
	if !flush || !c.unflushed {
		return nil
	}
	return c.flush()
}
