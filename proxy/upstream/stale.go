package upstream

import (
	"errors"
	"io"
	"syscall"

	"github.com/dual-proxy/dual-proxy/internal/netutil"
)

// resetUnanswered reports, for a request that is not replayed on a reused
// connection (the model pool's, SPEC POOL-17), that err is the peer
// resetting the connection before one byte of the answer arrived (got is
// the connection's received-byte count when the exchange began). A reset
// there means the peer dropped the connection with our request unread, or
// had already closed it when the request came (a server's idle timeout that
// fired as the request was sent; it says nothing, no "Connection: close"):
// a peer that had read and taken up the whole request closes with a FIN,
// not a reset. So the request was not processed and is sent once more on a
// fresh connection, as net/http resends a request that provably never left
// (RFC 9110 §9.2.2: a request known never to have been applied may be
// retried automatically; RFC 9112 §9.3.1). A clean EOF is not enough: a
// server that read the request and then died sends the same FIN, and the
// call is never sent twice on that guess; the check before the write
// (await_unix.go, quiet) drops a connection whose FIN came while it sat
// idle.
func (uc *upConn) resetUnanswered(err error, got int64) bool {
	return uc.src.got == got && uc.br.Buffered() == 0 && (netutil.IsReset(err) || errors.Is(err, syscall.EPIPE))
}

// ClosedUnansweredError is the failure of a request that is not replayed
// on a reused connection that the peer closed cleanly (EOF) before one
// byte of the answer arrived (SPEC POOL-17). The request is not sent again
// (a peer that read it and died closes the same way), but the failure says
// nothing about the peer's health: a server that closes kept-alive
// connections right after its answer, without "Connection: close", gives
// the same EOF on the next request. Callers that keep health marks (the
// model pool's cooldowns) find it with errors.As through any wrapping, or
// by its method ClosedUnanswered without importing this package.
type ClosedUnansweredError struct {
	Err error // the read's error: io.EOF, io.ErrUnexpectedEOF or a closed-connection error
}

func (e *ClosedUnansweredError) Error() string { return e.Err.Error() }

// Unwrap is Err.
func (e *ClosedUnansweredError) Unwrap() error { return e.Err }

// ClosedUnanswered reports true: the reused connection closed before an
// answer byte.
func (e *ClosedUnansweredError) ClosedUnanswered() bool { return true }

// closedUnanswered reports, for a request that is not replayed on a reused
// connection, that err is a clean close before one byte of the answer came
// (got as for resetUnanswered).
func (uc *upConn) closedUnanswered(err error, got int64) bool {
	return uc.src.got == got && uc.br.Buffered() == 0 &&
		(errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || netutil.IsClosed(err))
}
