package upstream

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"net/http/httputil"
	"strconv"

	"github.com/dual-proxy/dual-proxy/internal/httpmsg"
	"github.com/dual-proxy/dual-proxy/proxy/path"
)

// writeRequest writes r's head and body to bw and flushes.
func writeRequest(bw *bufio.Writer, c path.Candidate, r *Request, body io.Reader) error {
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

// readFinal reads the final response head from uc: interim 1xx answers
// are skipped (at most maxInterim); a head over maxResponseHead, a status
// outside 100-599, 101 (we never ask to switch protocols: Upgrade is
// hop-by-hop and removed) and field names that are not tokens (RFC 9112
// §5.1: "Name : value" is a smuggling shape) are errors.
func readFinal(uc *upConn, method string) (*http.Response, error) {
	lim := uc.lim
	lim.n, lim.rec = maxResponseHead, lim.rec[:0]
	if n := uc.br.Buffered(); n > 0 {
		b, _ := uc.br.Peek(n)
		lim.rec = append(lim.rec, b...)
	}
	defer func() {
		lim.n = -1
		if cap(lim.rec) > 64<<10 {
			lim.rec = nil // do not keep a huge head's buffer with a pooled connection
		}
	}()
	for i := 0; ; i++ {
		start := len(lim.rec) - uc.br.Buffered()
		resp, err := http.ReadResponse(uc.br, &http.Request{Method: method})
		if err != nil {
			return nil, err
		}
		if resp.Close {
			// net/http deleted the Connection field because it holds
			// "close"; the fields it names are hop-by-hop all the same
			// (RFC 9110 §7.6.1, SPEC HTTP-5).
			for _, name := range httpmsg.ConnectionTokens(lim.rec[start : len(lim.rec)-uc.br.Buffered()]) {
				resp.Header.Del(name)
			}
		}
		switch {
		case resp.StatusCode < 100 || resp.StatusCode > 599:
			return nil, errors.New("malformed response status " + strconv.Itoa(resp.StatusCode))
		case resp.StatusCode == http.StatusSwitchingProtocols:
			return nil, errors.New("unexpected 101 Switching Protocols (the proxy does not forward Upgrade)")
		case resp.StatusCode < 200:
			if i >= maxInterim {
				return nil, errors.New("too many interim responses")
			}
			continue
		}
		for k := range resp.Header {
			if !httpmsg.IsTokenString(k) {
				return nil, errors.New("malformed response header field name")
			}
		}
		return resp, nil
	}
}

// writeHead writes the request line and header of r for candidate c:
// origin-form to an origin (direct or through SOCKS5), absolute-form with
// Proxy-Authorization to an http or https gateway (SPEC GW-4); framing from
// r.Length.
func writeHead(bw *bufio.Writer, c path.Candidate, r *Request) error {
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
	for k, vs := range r.Header {
		for _, v := range vs {
			bw.WriteString(k)
			bw.WriteString(": ")
			bw.WriteString(v)
			bw.WriteString("\r\n")
		}
	}
	if auth := c.ProxyAuthorization(); auth != "" {
		bw.WriteString("Proxy-Authorization: ")
		bw.WriteString(auth)
		bw.WriteString("\r\n")
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
