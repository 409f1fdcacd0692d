package upstream

import (
	"bufio"
	"errors"
	"io"
	"net/http/httputil"
	"sync"
	"time"
)

// upBody is a response body read from an upstream connection by its
// head's framing (RFC 9112 §6.3); at EOF or Close the connection goes
// back to the pool when the exchange is complete.
//
// Close may be called while a Read is in flight on another goroutine (the
// pool ends a stream that way): mu is held by Read for the whole read and
// by Close while it inspects the connection, so the two never touch the
// buffered reader at once. A Close that finds a Read in flight interrupts
// it with a past read deadline (SetReadDeadline is safe to call
// concurrently) and closes the connection; it is never pooled then.
type upBody struct {
	uc       *upConn
	pool     *connPool
	watch    watch // the exchange's: its end is false once the context ended
	reusable bool  // false after Connection: close, or a request not fully sent
	// left is the rest of a Content-Length body (0: none left, or no
	// body); -1: chunked or until close (under mu).
	left    int64
	chunked io.Reader // the chunked decoder, for a chunked body

	mu   sync.Mutex
	err  error // sticky end of the body: io.EOF or the failure (under mu)
	eof  bool  // the body was read to its end (under mu)
	done bool  // released (under mu)
}

// setBody makes r.Body read r's body from uc. Every field of the body is
// set: r may be a Request.Into that carried an earlier response.
func (r *Response) setBody(uc *upConn, pool *connPool, w watch) {
	b := &r.body
	b.uc, b.pool, b.watch, b.reusable = uc, pool, w, !r.Close
	b.chunked, b.err, b.eof, b.done = nil, nil, false, false
	switch {
	case r.NoBody:
		b.left = 0
	case r.Chunked:
		b.left, b.chunked = -1, httputil.NewChunkedReader(uc.br)
	default:
		b.left = r.ContentLength // -1: until close
	}
	r.Body = b
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
	n, err := b.readWire(p)
	if err == io.EOF {
		b.eof = true
		b.release(false) // release the connection before the client sees the end
	}
	return n, err
}

// readWire reads body bytes by the framing; io.EOF only at the body's
// clean end (a connection closed inside a Content-Length body or a chunk
// is io.ErrUnexpectedEOF). Called with mu held.
func (b *upBody) readWire(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	var n int
	var err error
	switch {
	case b.chunked != nil:
		n, err = b.chunked.Read(p)
		if err == io.EOF {
			if terr := skipTrailer(b.uc.br); terr != nil {
				err = terr
			}
		}
	case b.left == 0:
		err = io.EOF
	case b.left > 0:
		if int64(len(p)) > b.left {
			p = p[:b.left]
		}
		n, err = b.uc.br.Read(p)
		b.left -= int64(n)
		switch {
		case b.left == 0:
			err = io.EOF
		case err == io.EOF:
			err = io.ErrUnexpectedEOF
		}
	default:
		n, err = b.uc.br.Read(p)
	}
	if err != nil {
		b.err = err
	}
	return n, err
}

// maxTrailer bounds the trailer section of a chunked response (bytes).
const maxTrailer = 64 << 10

// skipTrailer reads the trailer section after the last chunk up to its
// empty line and drops it (RFC 9112 §7.1.2): trailers are not forwarded
// (the proxy announces none, and Trailer is hop-by-hop).
func skipTrailer(br *bufio.Reader) error {
	total, partial := 0, false
	for {
		line, err := br.ReadSlice('\n')
		if total += len(line); total > maxTrailer {
			return errors.New("response trailer section too large")
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			partial = true
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		if !partial && (len(line) == 1 || len(line) == 2 && line[0] == '\r') {
			return nil
		}
		partial = false
	}
}

// Buffered is how many response bytes are already read from the socket:
// writeResponse sends a small body together with the head only when it is
// all here (never waiting for a slow body before the head). It is
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
		// body that may still wait for the network (chunked, until close,
		// or not read to its length: a caller that gave up halfway) can
		// make that read wait, so only then is it bounded (a deadline is
		// a timer operation); an answer without a body never
		// waits.
		if b.left != 0 {
			b.uc.conn.SetReadDeadline(time.Now().Add(time.Millisecond))
			probed = true
		}
		var one [1]byte
		if n, err := b.readWire(one[:]); n == 0 && err == io.EOF {
			b.eof = true
		}
	}
	// end reports false when the exchange's context ended and its
	// past-deadline callback has run or is about to: never pooled then.
	stopped := b.watch.end()
	// Bytes after the response (an origin that sent more than it framed)
	// would be read as the next answer: such a connection is not reused.
	if b.eof && !interrupted && b.reusable && stopped && b.uc.br.Buffered() == 0 {
		if probed {
			b.uc.conn.SetReadDeadline(time.Time{})
			b.uc.headDeadline = time.Time{}
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
	return nil
}

// errHeaderTimeout is the response-header timeout; it is a
// net.Error with Timeout() true, which classifies it as PhaseResponseHeader.
var errHeaderTimeout error = headerTimeout{}

type headerTimeout struct{}

func (headerTimeout) Error() string   { return "timeout awaiting response headers" }
func (headerTimeout) Timeout() bool   { return true }
func (headerTimeout) Temporary() bool { return true }
