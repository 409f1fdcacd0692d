package upstream

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"net/http/httputil"
	"strconv"

	"github.com/dual-proxy/dual-proxy/internal/lib/httpmsg"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
)

// writeRequest writes r's head and body to bw and flushes.
func writeRequest(bw *bufio.Writer, c candidate.Candidate, r *Request, body io.Reader) error {
	if err := writeHead(bw, c, r); err != nil {
		return err
	}
	if r.Length != 0 && body != nil {
		var err error
		if r.Length < 0 {
			cw := httputil.NewChunkedWriter(bw)
			if _, err = io.Copy(cw, body); err == nil {
				cw.Close()
				_, err = bw.WriteString("\r\n")
			}
		} else {
			_, err = io.Copy(bw, io.LimitReader(body, r.Length))
		}
		if err != nil {
			return err
		}
	}
	return bw.Flush()
}

// readFinal reads the final response head from uc (httpmsg.ReadResponseHead:
// a status outside 100-599, a field name that is not a token, RFC 9112
// §5.1, and smuggling shapes are errors there): interim 1xx answers are
// skipped (at most maxInterim), all heads together may take at most
// maxResponseHead bytes, and 101 is an error (we never ask to switch
// protocols: Upgrade is hop-by-hop and removed). The head is read into
// into (Request.Into) when set.
func readFinal(uc *upConn, method string, into *Response) (*Response, error) {
	resp := into
	if resp == nil {
		resp = &Response{}
	}
	left := maxResponseHead
	for i := 0; ; i++ {
		if err := httpmsg.ReadResponseHead(uc.br, left, method, &resp.ResponseHead); err != nil {
			return nil, err
		}
		left -= resp.Size
		switch {
		case resp.StatusCode == http.StatusSwitchingProtocols:
			return nil, errors.New("unexpected 101 Switching Protocols (the proxy does not forward Upgrade)")
		case resp.StatusCode < 200:
			if i >= maxInterim {
				return nil, errors.New("too many interim responses")
			}
			continue
		}
		return resp, nil
	}
}

// writeHead writes the request line and header of r for candidate c:
// origin-form to an origin (direct or through SOCKS5), absolute-form with
// Proxy-Authorization to an http or https gateway (SPEC GW-4); framing from
// r.Length. The fields go out in r.Header's order.
func writeHead(bw *bufio.Writer, c candidate.Candidate, r *Request) error {
	if b, ok := appendHead(bw, c, r); ok {
		_, err := bw.Write(b)
		return err
	}
	return writeHeadPieces(bw, c, r)
}

// writeHeadPieces is writeHead for a head longer than bw's free space.
func writeHeadPieces(bw *bufio.Writer, c candidate.Candidate, r *Request) error {
	bw.WriteString(r.Method)
	bw.WriteByte(' ')
	if !c.SpeaksHTTP() {
		bw.WriteString(r.Origin)
	} else {
		bw.WriteString(r.Absolute)
	}
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	bw.WriteString(r.Authority)
	bw.WriteString("\r\n")
	for _, f := range r.Header {
		bw.WriteString(f.Name)
		bw.WriteString(": ")
		bw.WriteString(f.Value)
		bw.WriteString("\r\n")
	}
	if auth := c.ProxyAuthorization(); auth != "" {
		bw.WriteString("Proxy-Authorization: ")
		bw.WriteString(auth)
		bw.WriteString("\r\n")
	}
	if r.Close {
		bw.WriteString("Connection: close\r\n")
	}
	switch {
	case r.Length > 0:
		bw.WriteString("Content-Length: ")
		bw.WriteString(strconv.FormatInt(r.Length, 10))
		bw.WriteString("\r\n")
	case r.Length < 0:
		bw.WriteString("Transfer-Encoding: chunked\r\n")
	case r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch:
		bw.WriteString("Content-Length: 0\r\n")
	}
	_, err := bw.WriteString("\r\n")
	return err
}

// appendHead is writeHead's head appended to bw.AvailableBuffer(), when
// it fits there (ok false: nothing appended, the caller writes it piece
// by piece): one Write instead of a WriteString per piece (twenty
// calls per plain request with the answer's head). The bytes are
// writeHead's, in the same order.
func appendHead(bw *bufio.Writer, c candidate.Candidate, r *Request) (b []byte, ok bool) {
	target := r.Absolute
	if !c.SpeaksHTTP() {
		target = r.Origin
	}
	auth := c.ProxyAuthorization()
	// An upper bound of the head's length: the fixed text is less than 96
	// bytes, a Content-Length value at most 19, "Connection: close" 19.
	n := len(r.Method) + len(target) + len(r.Authority) + len(auth) + 96 + 19 + 19
	for _, f := range r.Header {
		n += len(f.Name) + len(f.Value) + 4
	}
	if n > bw.Available() {
		return nil, false
	}
	b = bw.AvailableBuffer()
	b = append(b, r.Method...)
	b = append(b, ' ')
	b = append(b, target...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, r.Authority...)
	b = append(b, "\r\n"...)
	for _, f := range r.Header {
		b = append(b, f.Name...)
		b = append(b, ": "...)
		b = append(b, f.Value...)
		b = append(b, "\r\n"...)
	}
	if auth != "" {
		b = append(b, "Proxy-Authorization: "...)
		b = append(b, auth...)
		b = append(b, "\r\n"...)
	}
	if r.Close {
		b = append(b, "Connection: close\r\n"...)
	}
	switch {
	case r.Length > 0:
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, r.Length, 10)
		b = append(b, "\r\n"...)
	case r.Length < 0:
		b = append(b, "Transfer-Encoding: chunked\r\n"...)
	case r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch:
		b = append(b, "Content-Length: 0\r\n"...)
	}
	return append(b, "\r\n"...), true
}
