package proxy

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"io"
	"net"
	"time"
)

// The client watch of a CONNECT open (SPEC CON-1, CON-2). It differs from
// a plain request's in two ways.
//
// Early bytes: a client may send bytes right after its CONNECT head (a TLS
// ClientHello). They stay in br for the tunnel, and the watch goes on
// reading behind them, so a client that sent some and then left is
// noticed as one that sent none (until br's 4 KiB are full: then the
// watch ends, and the open runs to its end).
//
// Half-close: a FIN is not a departure (RFC 9293 §3.6: the client may
// still read; `printf 'CONNECT …' | nc -N` sends its bytes, then FIN, and
// waits for the answer). The read cannot tell a half-close from a close,
// so the watch writes the first byte of the answer, which every answer to
// a CONNECT starts with ("HTTP/1.1 …"): a client that closed its socket
// answers it with a reset, one that half-closed takes it. Until the open
// ends, the watch then checks every clientWatchDelay whether the
// connection was reset (a zero-length write fails), and only a reset
// cancels the open. handleConnect writes the rest of its answer after the
// probe (answerProbe).

// answerProbe is the byte a tunnel watch writes to a half-closed client:
// the first of every answer handleConnect writes.
const answerProbe = "H"

// watchTunnel registers the open of a CONNECT on c (br holds the bytes the
// client sent after its head), as watch does for plain requests; its stop
// ends it, and afterwards probed says how many bytes of the answer were
// written.
func (ws *watchSweeper) watchTunnel(c net.Conn, br *bufio.Reader, cancel context.CancelCauseFunc) *clientWatch {
	return ws.register(&clientWatch{c: c, br: br, cancel: cancel, since: ws.ticks.Load(), ws: ws, tunnel: true})
}

// runTunnel reads the client's bytes into br without consuming them until
// EOF, an error or stop, and cancels the open when the client is gone.
func (w *clientWatch) runTunnel() {
	for {
		_, err := w.br.Peek(w.br.Buffered() + 1)
		if err == nil {
			continue // early bytes: kept, and the watch goes on behind them
		}
		var ne net.Error
		switch {
		case errors.Is(err, bufio.ErrBufferFull), errors.As(err, &ne) && ne.Timeout():
			return // br is full (the open runs to its end), or stopped
		case errors.Is(err, io.EOF):
			w.halfClosed()
		default:
			w.cancel(errClientGone) // reset
		}
		return
	}
}

// halfClosed writes the answer's first byte to a client whose read ended
// with EOF and cancels the open if the client turns out to have closed
// its socket (a reset), until stop.
func (w *clientWatch) halfClosed() {
	if _, err := io.WriteString(w.c, answerProbe); err != nil {
		w.cancel(errClientGone)
		return
	}
	w.probed = len(answerProbe)
	t := time.NewTicker(cmp.Or(w.ws.delay, clientWatchDelay))
	defer t.Stop()
	for {
		select {
		case <-w.quit:
			return
		case <-t.C:
			if _, err := w.c.Write(nil); err != nil {
				w.cancel(errClientGone)
				return
			}
		}
	}
}

// skipWriter drops the first n bytes written to it, then writes to w: an
// answer whose first bytes the tunnel watch already wrote.
type skipWriter struct {
	w io.Writer
	n int
}

func (s *skipWriter) Write(p []byte) (int, error) {
	skip := min(s.n, len(p))
	s.n -= skip
	if skip == len(p) {
		return len(p), nil
	}
	n, err := s.w.Write(p[skip:])
	return skip + n, err
}
