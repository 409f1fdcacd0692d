package proxy

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"net/http/httputil"
	"strconv"
	"sync"

	"github.com/dual-proxy/dual-proxy/internal/lib/httpmsg"
	"github.com/dual-proxy/dual-proxy/proxy/upstream"
)

// writeResponse writes resp to the client: status line, end-to-end fields
// in the order received (hop-by-hop ones removed, RFC 9110 §7.6.1; no header
// map), and the body with a flush after every read so event streams are
// not buffered (SPEC HTTP-4). It reports whether the response was framed
// and fully delivered, so the connection may be reused, and the body
// bytes written (metrics).
func writeResponse(bw *bufio.Writer, resp *upstream.Response, head *httpmsg.RequestHead) (ok bool, n int64) {
	bodyless := head.Method == http.MethodHead || resp.StatusCode == 204 || resp.StatusCode == 304 || resp.StatusCode < 200
	length := int64(-1) // the Content-Length to send
	chunked, closeDelimited := false, false
	switch {
	case bodyless:
		if head.Method == http.MethodHead {
			length = resp.ContentLength // what a GET would get; -1: none received
		}
	case resp.ContentLength >= 0:
		length = resp.ContentLength
	case head.Minor >= 1:
		chunked = true
	default:
		closeDelimited = true
	}

	hf := respFraming{length: length, chunked: chunked, close: closeDelimited || !head.KeepAlive, keepAlive10: head.Minor == 0}
	if n := respHeadBound(resp); n <= bw.Available() {
		bw.Write(appendResponseHead(bw.AvailableBuffer(), resp, hf)) // one Write
	} else {
		writeResponseHead(bw, resp, hf)
	}
	if bodyless {
		return bw.Flush() == nil, 0
	}
	// A small body of known length goes out with the head in
	// one write, read straight into the bufio buffer (no allocation).
	if !chunked && !closeDelimited && resp.ContentLength >= 0 && resp.ContentLength <= int64(bw.Available()) && bodyHere(resp) {
		buf := bw.AvailableBuffer()[:resp.ContentLength]
		n, err := io.ReadFull(resp.Body, buf)
		if err == nil {
			// The body is complete: release the upstream connection to the
			// pool before the client, seeing the answer, sends its next
			// request (proxy/upstream).
			resp.Body.Close()
		}
		bw.Write(buf[:n])
		return bw.Flush() == nil && err == nil, int64(n)
	}
	if err := bw.Flush(); err != nil {
		return false, 0
	}
	ok, n = copyBody(bw, resp, chunked)
	return ok && !closeDelimited, n
}

// respFraming is the framing writeResponse chose for the head it writes:
// the Content-Length to send (-1: none), chunked, Connection: close, or
// (HTTP/1.0 client, not closing) Connection: keep-alive.
type respFraming struct {
	length         int64
	chunked, close bool
	keepAlive10    bool
}

// respHeadBound is an upper bound of the head writeResponse writes for
// resp (the fixed text is less than 128 bytes, a length at most 19).
func respHeadBound(resp *upstream.Response) int {
	n := len(resp.Reason) + 128 + 19
	for _, f := range resp.Fields {
		n += len(f.Name) + len(f.Value) + 4
	}
	return n
}

// writeResponseHead writes the answer's head piece by piece (a head
// longer than the writer's free space; appendResponseHead otherwise):
// a clean status line, resp's end-to-end fields in order but its
// Content-Length, then ours.
func writeResponseHead(bw *bufio.Writer, resp *upstream.Response, hf respFraming) {
	bw.WriteString("HTTP/1.1 ")
	bw.Write(strconv.AppendInt(bw.AvailableBuffer(), int64(resp.StatusCode), 10))
	bw.WriteByte(' ')
	// A clean status line, never the upstream's bytes (a bare CR or an
	// ESC in its reason phrase must not reach the client).
	bw.WriteString(httpmsg.Reason(resp.StatusCode, resp.Reason))
	bw.WriteString("\r\n")
	for f := range httpmsg.EndToEnd(resp.Fields) {
		if httpmsg.EqualFoldASCII(f.Name, "Content-Length") {
			continue // framing is ours
		}
		bw.WriteString(f.Name)
		bw.WriteString(": ")
		bw.WriteString(f.Value)
		bw.WriteString("\r\n")
	}
	if hf.length >= 0 {
		bw.WriteString("Content-Length: ")
		bw.Write(strconv.AppendInt(bw.AvailableBuffer(), hf.length, 10))
		bw.WriteString("\r\n")
	}
	if hf.chunked {
		bw.WriteString("Transfer-Encoding: chunked\r\n")
	}
	if hf.close {
		bw.WriteString("Connection: close\r\n")
	} else if hf.keepAlive10 {
		bw.WriteString("Connection: keep-alive\r\n") // RFC 9112 §9.3: HTTP/1.0 persistence is opt-in
	}
	bw.WriteString("\r\n")
}

// appendResponseHead appends to b the head writeResponseHead writes, the
// same bytes.
func appendResponseHead(b []byte, resp *upstream.Response, hf respFraming) []byte {
	b = append(b, "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(resp.StatusCode), 10)
	b = append(b, ' ')
	b = append(b, httpmsg.Reason(resp.StatusCode, resp.Reason)...)
	b = append(b, "\r\n"...)
	for f := range httpmsg.EndToEnd(resp.Fields) {
		if httpmsg.EqualFoldASCII(f.Name, "Content-Length") {
			continue // framing is ours
		}
		b = append(b, f.Name...)
		b = append(b, ": "...)
		b = append(b, f.Value...)
		b = append(b, "\r\n"...)
	}
	if hf.length >= 0 {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, hf.length, 10)
		b = append(b, "\r\n"...)
	}
	if hf.chunked {
		b = append(b, "Transfer-Encoding: chunked\r\n"...)
	}
	if hf.close {
		b = append(b, "Connection: close\r\n"...)
	} else if hf.keepAlive10 {
		b = append(b, "Connection: keep-alive\r\n"...) // RFC 9112 §9.3: HTTP/1.0 persistence is opt-in
	}
	return append(b, "\r\n"...)
}

// copyBody streams resp's body to bw after the head, chunked when asked,
// with a flush after every read, so an event stream reaches the client as
// it is produced. It reports whether the body
// ended cleanly and the body bytes written.
func copyBody(bw *bufio.Writer, resp *upstream.Response, chunked bool) (ok bool, written int64) {
	w := bw
	var cw interface {
		Write([]byte) (int, error)
		Close() error
	}
	if chunked {
		cw = httputil.NewChunkedWriter(bw)
	}
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			var werr error
			if cw != nil {
				_, werr = cw.Write(buf[:n])
			} else {
				_, werr = w.Write(buf[:n])
			}
			if werr == nil {
				werr = w.Flush()
			}
			if werr != nil {
				return false, written
			}
			written += int64(n)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				// A failure after the body started records no cooldown
				// (the path worked; the origin or the network broke mid-stream);
				// the client sees a truncated body and a close.
				return false, written
			}
			break
		}
	}
	if cw != nil {
		cw.Close()
		w.WriteString("\r\n") // end of the (empty) trailer section
	}
	return w.Flush() == nil, written
}

// copyBufs holds the 32 KiB body copy buffers of writeResponse, so a
// response does not allocate one (it was half of all bytes allocated per
// plain request; see docs/BENCHMARKS.md).
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// bodyHere reports whether resp's whole body is already buffered, so
// reading it cannot delay the head (a streamed answer is sent as it
// arrives, not held until its end).
func bodyHere(resp *upstream.Response) bool {
	b, ok := resp.Body.(interface{ Buffered() int })
	return ok && int64(b.Buffered()) >= resp.ContentLength
}
