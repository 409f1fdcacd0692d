package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http/httputil"

	"github.com/dual-proxy/dual-proxy/internal/lib/httpmsg"
	"github.com/dual-proxy/dual-proxy/internal/lib/netutil"
	"github.com/dual-proxy/dual-proxy/proxy/engine"
)

// maxTrailerLines bounds the trailer section of a chunked request body.
const maxTrailerLines = 128

// body is a request body read from the client connection (SPEC HTTP-2):
// the engine's Body, whose Rest, when the body streams, is rest, and what
// it took from the server's buffering budget. The zero value is an empty
// body.
type body struct {
	engine.Body
	reserved int64 // bytes taken from the server's buffering budget
	rest     clientRest
}

// clientRest is the streamed remainder of a body as the attempt that owns
// it reads it from the client: touch first (the server extends the client
// connection's read deadline: a client that stalls mid-upload is dropped
// after idleTimeout), and a chunked body's trailer section consumed at its
// end, so the connection is positioned at the next request.
type clientRest struct {
	r        io.Reader
	trailers *bufio.Reader // chunked: the trailer section follows r's EOF
	touch    func()        // nil: none
}

func (c *clientRest) Read(p []byte) (int, error) {
	if c.touch != nil {
		c.touch()
	}
	n, err := c.r.Read(p)
	if err == io.EOF && c.trailers != nil {
		if terr := skipTrailers(c.trailers); terr != nil {
			err = terr
		}
	}
	return n, err
}

// stream makes r, with the trailer section in trailers (nil: none), the
// rest of b, read once while it is sent.
func (b *body) stream(r io.Reader, trailers *bufio.Reader) {
	b.rest = clientRest{r: r, trailers: trailers}
	b.Rest = &b.rest
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
	want := int64(engine.MaxReplayBody + 1) // chunked: the most we may buffer
	if !head.Chunked {
		want = head.ContentLength
	}
	if (!head.Chunked && want > engine.MaxReplayBody) || (reserve != nil && !reserve(want)) {
		b.stream(r, trailerReader(head, br))
		return nil
	}
	b.reserved = want
	var buf []byte
	var err error
	if head.Chunked {
		buf, err = io.ReadAll(io.LimitReader(r, engine.MaxReplayBody+1))
	} else {
		buf = make([]byte, head.ContentLength) // exact size: no doubling
		_, err = io.ReadFull(r, buf)
	}
	if err != nil {
		return clientReadError(err)
	}
	b.Buf = buf
	if len(buf) > engine.MaxReplayBody {
		b.stream(r, br)
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
// memory at once for replay (each may buffer up to 8 MiB); past
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
