package pool

import (
	"context"
	"io"
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
// client gone cancels it through the request's context. Pings and
// pre-commit keep-alives are written by a ticker under the client stream's
// write lock (clientstream.go), so they never interleave with an event's
// bytes.

// memberStream is one attempt's event stream from its member, read on the
// serving goroutine.
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
// keep-alive pool instead of being cut by the cancel; the
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
