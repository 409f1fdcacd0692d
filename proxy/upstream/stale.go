package upstream

import (
	"errors"
	"io"
	"syscall"

	"github.com/dual-proxy/dual-proxy/internal/lib/netutil"
)

// ClosedUnansweredError is the failure of a request that is not replayed
// (Request.ReuseUnreplayable) on a reused connection that the peer closed
// (EOF, or a reset) after the request was written, at least in part, and
// before one byte of the answer arrived. Send does not resend it: whether
// to send it once more is the caller's decision (the model pool sends it
// once more, on a connection of its own, to the same channel, as the
// Anthropic and OpenAI SDKs retry a connection error). It
// says nothing about the peer's health: a server whose idle timeout fires
// as the request comes, or that closes kept-alive connections right after
// its answer without "Connection: close", gives the same close. Callers
// find it with errors.As through any wrapping, or by its method
// ClosedUnanswered without importing this package.
type ClosedUnansweredError struct {
	Err error // the error: io.EOF, io.ErrUnexpectedEOF, a reset, EPIPE or a closed-connection error
}

func (e *ClosedUnansweredError) Error() string { return e.Err.Error() }

// Unwrap is Err.
func (e *ClosedUnansweredError) Unwrap() error { return e.Err }

// ClosedUnanswered reports true: the reused connection closed before an
// answer byte.
func (e *ClosedUnansweredError) ClosedUnanswered() bool { return true }

// closedUnanswered reports, for a request that is not replayed on a reused
// connection, that err is the peer's close (EOF, a reset, a broken pipe)
// before one byte of the answer came; got is the connection's
// received-byte count when the exchange began.
func (uc *upConn) closedUnanswered(err error, got int64) bool {
	return uc.src.got == got && uc.br.Buffered() == 0 &&
		(errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || netutil.IsClosed(err) ||
			netutil.IsReset(err) || errors.Is(err, syscall.EPIPE))
}
