package upstream

import (
	"errors"
	"io"
	"net/http"
	"sync"
	"time"
)

// upBody is a response body read from an upstream connection; at EOF or
// Close the connection goes back to the pool when the exchange is complete.
//
// Close may be called while a Read is in flight on another goroutine (the
// pool ends a stream that way): mu is held by Read for the whole read and
// by Close while it inspects the connection, so the two never touch the
// buffered reader at once. A Close that finds a Read in flight interrupts
// it with a past read deadline (SetReadDeadline is safe to call
// concurrently) and closes the connection; it is never pooled then.
type upBody struct {
	io.ReadCloser
	uc       *upConn
	pool     *connPool
	stop     func() bool // the exchange's context.AfterFunc stop: false once the context ended
	reusable bool        // false for a response to a request not fully sent
	length   int64       // the response's Content-Length; -1: chunked (or unknown)
	read     int64       // body bytes returned by Read (under mu)

	mu   sync.Mutex
	eof  bool // the body was read to its end (under mu)
	done bool // released (under mu)
}

// errBodyClosed is a Read after Close (net/http says the same).
var errBodyClosed = errors.New("read on closed response body")

func (b *upBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		if b.eof {
			return 0, io.EOF
		}
		return 0, errBodyClosed
	}
	n, err := b.ReadCloser.Read(p)
	b.read += int64(n)
	if err == io.EOF {
		b.eof = true
		b.release(false) // release the connection before the client sees the end
	}
	return n, err
}

// Buffered is how many response bytes are already read from the socket:
// writeResponse sends a small body together with the head only when it is
// all here (never waiting for a slow body before the head, HTTP-4). It is
// called only between Reads, on the reading goroutine.
func (b *upBody) Buffered() int { return b.uc.br.Buffered() }

// Close releases the connection: pooled after a complete body, else closed.
func (b *upBody) Close() error {
	if !b.mu.TryLock() {
		// A Read is in flight: end it, then release without reuse.
		b.uc.conn.SetReadDeadline(time.Unix(1, 0))
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.release(true)
	}
	defer b.mu.Unlock()
	return b.release(false)
}

// release returns the connection to the pool when the exchange completed
// cleanly, else closes it; interrupted forces a close. Called with mu held;
// idempotent.
func (b *upBody) release(interrupted bool) error {
	if b.done {
		return nil
	}
	b.done = true
	probed := false
	if !b.eof && !interrupted {
		// The caller read exactly Content-Length bytes (or the last chunk
		// is already buffered): one more read returns EOF without
		// touching the network; anything else is not a clean end. Only a
		// body without a length (chunked) or one not read to its length
		// (a caller that gave up halfway) can make that read wait, so
		// only then is it bounded (a deadline is a timer operation, issue
		// 20); a HEAD answer's empty body never waits.
		if b.length < 0 || (b.read != b.length && b.ReadCloser != http.NoBody) {
			b.uc.conn.SetReadDeadline(time.Now().Add(time.Millisecond))
			probed = true
		}
		var one [1]byte
		if n, err := b.ReadCloser.Read(one[:]); n == 0 && err == io.EOF {
			b.eof = true
		}
	}
	err := b.ReadCloser.Close()
	// stop reports false when the exchange's context ended and its
	// past-deadline callback has run or is about to: never pooled then.
	stopped := b.stop()
	// Bytes after the response (an origin that sent more than it framed)
	// would be read as the next answer: such a connection is not reused.
	if b.eof && !interrupted && b.reusable && stopped && err == nil && b.uc.br.Buffered() == 0 {
		if probed {
			b.uc.conn.SetReadDeadline(time.Time{})
		}
		// The read deadline is clear (exchange cleared the head's); the
		// write deadline of the request stays armed while the
		// connection is idle: the next request's first write replaces
		// it (deadlineWriter), and expiring on an idle connection it
		// affects nothing.
		b.pool.put(b.uc)
		return nil
	}
	b.uc.conn.Close()
	return err
}

// errHeaderTimeout is the response-header timeout (SPEC HTTP-4); it is a
// net.Error with Timeout() true, which classifies it as PhaseResponseHeader.
var errHeaderTimeout error = headerTimeout{}

type headerTimeout struct{}

func (headerTimeout) Error() string   { return "timeout awaiting response headers" }
func (headerTimeout) Timeout() bool   { return true }
func (headerTimeout) Temporary() bool { return true }
