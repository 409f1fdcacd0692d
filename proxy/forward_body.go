package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http/httputil"
	"sync"

	"github.com/dual-proxy/dual-proxy/internal/httpmsg"
	"github.com/dual-proxy/dual-proxy/internal/netutil"
)

// MaxReplayBody is the largest request body (bytes) buffered so it can be
// replayed on another candidate (SPEC HTTP-2). Larger bodies, and chunked
// bodies that grow past it, are streamed once: the first MaxReplayBody
// bytes of a chunked body are buffered, the remainder is read from the
// client while it is sent. A streamed body can still move to the next
// candidate as long as none of its unbuffered bytes were read (a failure to
// connect), never after.
const MaxReplayBody = 8 << 20

// maxTrailerLines bounds the trailer section of a chunked request body.
const maxTrailerLines = 128

// errBodyDetached is returned to an attempt that is no longer the owner of
// a streamed body (its request was abandoned).
var errBodyDetached = errors.New("request body belongs to another attempt")

// body is a request body read from the client connection (SPEC HTTP-2).
// buf holds the buffered bytes: the whole body when rest is nil, else a
// prefix. rest, when set, is the remainder, read once from the client by
// the attempt that owns it. The zero value is an empty body.
type body struct {
	buf      []byte
	rest     io.Reader     // nil: fully buffered (replayable)
	trailers *bufio.Reader // chunked: the trailer section follows rest's EOF
	chunked  bool          // the client framed it chunked
	reserved int64         // bytes taken from the server's buffering budget
	// touch, when set, is called before each read of rest (the server
	// extends the client connection's read deadline: a client that stalls
	// mid-upload is dropped after idleTimeout).
	touch func()

	mu        sync.Mutex
	owner     *attemptBody
	started   bool  // a read of rest began: the body cannot be sent again
	done      bool  // rest read to its end, trailers included
	clientErr error // reading from the client failed
}

// readBody reads the request body framing of head from br. A body of at
// most MaxReplayBody bytes is read completely; a larger one (or a chunked
// one that grows past it) is returned with rest set. It answers
// "Expect: 100-continue" itself before reading, so a client waiting for
// that answer never deadlocks (RFC 9110 §10.1.1; not to HTTP/1.0 clients).
// reserve (nil: unlimited) asks the server's buffering budget for n bytes;
// when it says no, the body is streamed once instead of buffered, so many
// large uploads at once cannot exhaust memory. body.reserved is what the
// caller must give back.
// Errors: a *httpmsg.StatusError (400) for a malformed chunked body; the read error
// when the client failed or left (no answer is due then).
func readBody(br *bufio.Reader, bw *bufio.Writer, head *httpmsg.RequestHead, reserve func(int64) bool) (*body, error) {
	b := &body{}
	return b, b.read(br, bw, head, reserve)
}

// read is readBody into b, which it resets first: a connection's plain
// requests share one body (forward).
func (b *body) read(br *bufio.Reader, bw *bufio.Writer, head *httpmsg.RequestHead, reserve func(int64) bool) error {
	*b = body{}
	var r io.Reader
	switch {
	case head.Chunked:
		r = httputil.NewChunkedReader(br)
	case head.ContentLength > 0:
		r = &lengthReader{r: br, n: head.ContentLength}
	default:
		return nil
	}
	if head.Expect100 && head.Minor >= 1 {
		bw.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
		if err := bw.Flush(); err != nil {
			return err
		}
	}
	b.chunked = head.Chunked
	want := int64(MaxReplayBody + 1) // chunked: the most we may buffer
	if !head.Chunked {
		want = head.ContentLength
	}
	if (!head.Chunked && want > MaxReplayBody) || (reserve != nil && !reserve(want)) {
		b.rest, b.trailers = r, trailerReader(head, br)
		return nil
	}
	b.reserved = want
	var buf []byte
	var err error
	if head.Chunked {
		buf, err = io.ReadAll(io.LimitReader(r, MaxReplayBody+1))
	} else {
		buf = make([]byte, head.ContentLength) // exact size: no doubling
		_, err = io.ReadFull(r, buf)
	}
	if err != nil {
		return clientReadError(err)
	}
	b.buf = buf
	if len(buf) > MaxReplayBody {
		b.rest, b.trailers = r, br
		return nil
	}
	if head.Chunked {
		if err := skipTrailers(br); err != nil {
			return clientReadError(err) // b.reserved is given back by the caller
		}
	}
	return nil
}

// clientReadError maps a body read error: the client's I/O failure is
// returned as is (nothing is answered); anything else is a malformed body
// (400).
func clientReadError(err error) error {
	var ne net.Error
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.As(err, &ne) || netutil.IsClosed(err) {
		return err
	}
	return httpmsg.BadRequest("malformed request body: " + err.Error())
}

// skipTrailers consumes the trailer section after a chunked body (RFC 9112
// §7.1.2); trailer fields are not forwarded (RFC 9110 §6.5.1 lets a
// recipient drop them).
func skipTrailers(br *bufio.Reader) error {
	for range maxTrailerLines {
		line, err := br.ReadSlice('\n')
		if err != nil {
			if errors.Is(err, io.EOF) {
				return io.ErrUnexpectedEOF
			}
			return err
		}
		if len(bytes.TrimRight(line, "\r\n")) == 0 {
			return nil
		}
	}
	return errors.New("too many trailer fields")
}

// length is the Content-Length to send upstream: the buffered size, the
// client's Content-Length for a streamed body, or -1 (chunked upstream) for
// a chunked body that is streamed.
func (b *body) length(head *httpmsg.RequestHead) int64 {
	switch {
	case b.rest == nil:
		return int64(len(b.buf))
	case head.Chunked:
		return -1
	}
	return head.ContentLength
}

// open returns a reader over the whole body for one attempt and makes that
// attempt the owner of rest, checking and switching under one lock: ok is
// false when unbuffered bytes were already read (the body cannot be sent
// again). The reader is nil for an empty body.
func (b *body) open() (a *attemptBody, ok bool) {
	if b.rest == nil && len(b.buf) == 0 {
		return nil, true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.started {
		return nil, false
	}
	a = &attemptBody{b: b}
	b.owner = a
	return a, true
}

// finished reports whether the body was read to its end, so the client
// connection is positioned at the next request and no attempt reads it
// any more.
func (b *body) finished() bool {
	if b.rest == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.done
}

// clientFailed returns the error of a failed read from the client (the
// client left or sent a malformed body), or nil.
func (b *body) clientFailed() error {
	if b.rest == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.clientErr
}

// attemptBody is the body as one attempt's transport reads it: buf, then
// rest while the attempt owns it. Close does not touch the client
// connection.
type attemptBody struct {
	b   *body
	off int
}

func (a *attemptBody) Read(p []byte) (int, error) {
	b := a.b
	if a.off < len(b.buf) {
		n := copy(p, b.buf[a.off:])
		a.off += n
		return n, nil
	}
	if b.rest == nil {
		return 0, io.EOF
	}
	b.mu.Lock()
	switch {
	case b.owner != a:
		b.mu.Unlock()
		return 0, errBodyDetached
	case b.clientErr != nil:
		b.mu.Unlock()
		return 0, b.clientErr
	case b.done:
		b.mu.Unlock()
		return 0, io.EOF
	}
	b.started = true
	b.mu.Unlock()
	if b.touch != nil {
		b.touch()
	}
	// Only the owner reads rest, and ownership moves only while !started,
	// so this read never runs concurrently with another.
	n, err := b.rest.Read(p)
	if err == nil {
		return n, nil
	}
	if err == io.EOF && b.chunked {
		if terr := skipTrailers(b.trailers); terr != nil {
			err = terr
		}
	}
	b.mu.Lock()
	if err == io.EOF {
		b.done = true
	} else {
		b.clientErr = err
	}
	b.mu.Unlock()
	return n, err
}

// Close is a no-op: the transport closes request bodies, but the client
// connection outlives the attempt.
func (a *attemptBody) Close() error { return nil }

// lengthReader reads exactly n bytes of a Content-Length body; an early
// EOF is io.ErrUnexpectedEOF (the client left mid-body), so a truncated
// body is never forwarded as complete.
type lengthReader struct {
	r io.Reader
	n int64
}

func (l *lengthReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	if err == io.EOF && l.n > 0 {
		err = io.ErrUnexpectedEOF
	}
	if err == nil && l.n == 0 {
		err = io.EOF
	}
	return n, err
}

// trailerReader is br when the body is chunked (its trailer section must be
// consumed after the body), else nil.
func trailerReader(head *httpmsg.RequestHead, br *bufio.Reader) *bufio.Reader {
	if head.Chunked {
		return br
	}
	return nil
}

// maxBuffered bounds the request body bytes all connections may hold in
// memory at once for replay (SPEC HTTP-2 buffers up to 8 MiB each); past
// it, bodies are streamed once (not replayable) instead.
const maxBuffered = 64 << 20

// reserveBody takes n bytes from the buffering budget; false when it is
// exhausted.
func (s *Server) reserveBody(n int64) bool {
	if s.buffered.Add(n) > maxBuffered {
		s.buffered.Add(-n)
		return false
	}
	return true
}

// releaseBody gives n bytes back to the buffering budget.
func (s *Server) releaseBody(n int64) { s.buffered.Add(-n) }
