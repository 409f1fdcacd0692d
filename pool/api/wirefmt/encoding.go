package wirefmt

import (
	"bufio"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"io"
	"net/http"
	"strings"
)

// DecodeResponse makes an upstream answer readable (RFC 9110 §8.4): the pool
// must inspect every answer (commit point, error class, key scrubbing), and
// strips the client's Accept-Encoding, but an upstream may still send a
// Content-Encoding it was not asked for, or a Transport may not decode it.
// gzip/x-gzip and deflate (zlib-wrapped, or raw as some servers send it) are
// decoded lazily on the first Read (so a streaming body does not block here)
// and Content-Encoding and Content-Length are removed; "identity" is just
// removed. It reports false for any other coding (br, zstd, a list), leaving
// the header and the bytes as they are.
func DecodeResponse(resp *http.Response) bool {
	ce := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding")))
	switch ce {
	case "":
		return true
	case "identity":
		resp.Header.Del("Content-Encoding")
		return true
	case "gzip", "x-gzip", "deflate":
	default:
		return false
	}
	resp.Header.Del("Content-Encoding")
	resp.Header.Del("Content-Length")
	resp.ContentLength = -1
	resp.Uncompressed = true
	resp.Body = &lazyDecoder{raw: resp.Body, gzip: ce != "deflate"}
	return true
}

// lazyDecoder decompresses raw on demand; Close closes raw.
type lazyDecoder struct {
	raw  io.ReadCloser
	gzip bool
	dec  io.Reader
	err  error
}

func (l *lazyDecoder) Read(p []byte) (int, error) {
	if l.dec == nil && l.err == nil {
		br := bufio.NewReader(l.raw)
		if l.gzip {
			l.dec, l.err = gzip.NewReader(br)
		} else if h, err := br.Peek(2); err == nil && h[0]&0x0f == 8 && (uint16(h[0])<<8|uint16(h[1]))%31 == 0 {
			l.dec, l.err = zlib.NewReader(br)
		} else {
			l.dec = flate.NewReader(br)
		}
	}
	if l.err != nil {
		return 0, l.err
	}
	return l.dec.Read(p)
}

func (l *lazyDecoder) Close() error { return l.raw.Close() }
