package proxy

import (
	"bufio"
	"io"
	"net"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/httpmsg"
	"github.com/dual-proxy/dual-proxy/proxy/engine"
)

// Non-HTTP clients (SPEC HTTP-5d). A request line starts with a method, an
// RFC 9110 §5.6.2 token, or with the empty lines RFC 9112 §2.2 lets a
// server skip. A first byte that is neither cannot become a request: the
// usual one is 0x16, a TLS ClientHello from a client given an https://
// proxy URL for this plain-HTTP proxy, which would otherwise wait for a
// line end until the head timeout and get a bare close. Such a client is
// answered 400 at once with a body that says what happened, its
// connection is closed, and the refusal is counted (Traffic.NotHTTP).

// Answers to a first byte that cannot start a request line. They are
// *httpmsg.StatusError, so serveConn writes them as any refused head.
var (
	errTLSClient = &httpmsg.StatusError{Status: 400,
		Msg: "this is an HTTP proxy: use http:// in the proxy URL (the client began a TLS handshake)"}
	errSOCKSClient = &httpmsg.StatusError{Status: 400,
		Msg: "this is an HTTP proxy: use http:// in the proxy URL (the client spoke SOCKS)"}
	errNotHTTP = &httpmsg.StatusError{Status: 400,
		Msg: "this is an HTTP proxy: the request does not start with an HTTP request line"}
)

// checkRequestStart peeks at the next byte of br (a client's head is due)
// and returns the answer for it when it cannot start a request line,
// counting it; nil when it can, or when the peek fails (the head reader
// then reports that failure).
func (s *Server) checkRequestStart(br *bufio.Reader) error {
	b, err := br.Peek(1)
	if err != nil || startsRequestLine(b[0]) {
		return nil
	}
	kind, answer := classifyNotHTTP(b[0])
	s.engine.Counters().NotHTTP[kind].Add(1)
	return answer
}

// startsRequestLine reports whether a request head may begin with b: a
// method's first byte (a token character) or the CR or LF of an empty
// line before the request line (RFC 9112 §2.2).
func startsRequestLine(b byte) bool {
	return b == '\r' || b == '\n' || httpmsg.IsToken([]byte{b})
}

// classifyNotHTTP names what a client whose first byte is b (not one of
// startsRequestLine's) most likely speaks: 0x16 is a TLS handshake record
// (RFC 8446 §5.1), 0x04 and 0x05 the SOCKS versions (RFC 1928 §3).
func classifyNotHTTP(b byte) (int, *httpmsg.StatusError) {
	switch b {
	case 0x16:
		return engine.NotHTTPTLS, errTLSClient
	case 0x04, 0x05:
		return engine.NotHTTPSOCKS, errSOCKSClient
	}
	return engine.NotHTTPOther, errNotHTTP
}

// notHTTPLinger bounds how long a refused non-HTTP client's further bytes
// are read and dropped after the answer, and how many.
const (
	notHTTPLinger    = time.Second
	notHTTPLingerMax = 64 << 10 // bytes
)

// lingerIfNotHTTP runs after the answer to err was written on c: for a
// non-HTTP refusal it half-closes c and drops what the client still sends
// until it closes, for at most notHTTPLinger and notHTTPLingerMax bytes. A
// close with unread bytes queued sends a TCP reset, which can destroy the
// answer before the client reads it (net/http lingers for the same
// reason).
func lingerIfNotHTTP(c net.Conn, err error) {
	if err != errTLSClient && err != errSOCKSClient && err != errNotHTTP {
		return
	}
	if cw, ok := c.(interface{ CloseWrite() error }); !ok || cw.CloseWrite() != nil {
		return
	}
	c.SetReadDeadline(time.Now().Add(notHTTPLinger))
	io.CopyN(io.Discard, c, notHTTPLingerMax)
}
