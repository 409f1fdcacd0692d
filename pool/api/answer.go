package api

import (
	"fmt"
	"net/http"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
)

// WriteError writes a pool-generated error document.
func WriteError(w http.ResponseWriter, fl Flavour, status int, msg string, attempts []neutral.Attempt) {
	b := fl.ErrorBody(status, msg, attempts)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	if status == statusOverloaded && writeOverloaded(w, b) {
		return
	}
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// statusOverloaded is Anthropic's "overloaded" status (docs.anthropic.com
// "Errors"), which net/http has no reason phrase for.
const statusOverloaded = 529

// writeOverloaded writes a complete HTTP/1.1 "529 Overloaded" response on the
// hijacked connection and closes it: net/http would send the status line
// "529 status code 529". It reports false (nothing written) when the
// connection cannot be hijacked (HTTP/2, which has no reason phrase, or an
// in-process writer); the caller then writes normally.
func writeOverloaded(w http.ResponseWriter, body []byte) bool {
	h := w.Header().Clone()
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false
	}
	defer conn.Close()
	h.Set("Connection", "close")
	h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	_, _ = rw.WriteString("HTTP/1.1 529 Overloaded\r\n")
	_ = h.Write(rw)
	_, _ = rw.WriteString("\r\n")
	_, _ = rw.Write(body)
	_ = rw.Flush()
	return true
}
