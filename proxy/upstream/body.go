package upstream

import (
	"io"
	"time"
)

// upBody is a response body read from an upstream connection; at EOF or
// Close the connection goes back to the pool when the exchange is complete.
type upBody struct {
	io.ReadCloser
	uc        *upConn
	pool      *connPool
	stop      func() bool
	reusable  bool
	cancelled func() bool
	eof       bool
	done      bool
}

func (b *upBody) Read(p []byte) (int, error) {
	if b.done {
		return 0, io.EOF
	}
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.eof = true
		b.Close() // release the connection before the client sees the end
	}
	return n, err
}

// Buffered is how many response bytes are already read from the socket:
// writeResponse sends a small body together with the head only when it is
// all here (never waiting for a slow body before the head, HTTP-4).
func (b *upBody) Buffered() int { return b.uc.br.Buffered() }

// Close releases the connection: pooled after a complete body, else closed.
func (b *upBody) Close() error {
	if b.done {
		return nil
	}
	b.done = true
	if !b.eof {
		// The caller read exactly Content-Length bytes (or the last chunk
		// is already buffered): one more read returns EOF without
		// touching the network; anything else is not a clean end.
		b.uc.conn.SetReadDeadline(time.Now().Add(time.Millisecond))
		var one [1]byte
		if n, err := b.ReadCloser.Read(one[:]); n == 0 && err == io.EOF {
			b.eof = true
		}
	}
	err := b.ReadCloser.Close()
	b.stop()
	// Bytes after the response (an origin that sent more than it framed)
	// would be read as the next answer: such a connection is not reused.
	if b.eof && b.reusable && !b.cancelled() && err == nil && b.uc.br.Buffered() == 0 {
		b.uc.conn.SetDeadline(time.Time{})
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
