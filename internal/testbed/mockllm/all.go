package mockllm

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"io"
	"net/http"
	"strings"
)

// apiOfPath is the API whose model call path is, for a channel of API All:
// /v1/messages, /v1/chat/completions and /v1/responses, with or without
// the /v1 prefix; "" for any other path.
func apiOfPath(path string) string {
	switch strings.TrimPrefix(path, "/v1") {
	case "/messages":
		return Anthropic
	case "/chat/completions":
		return Chat
	case "/responses":
		return Responses
	}
	return ""
}

// serveSideRoute answers, for a channel of API All, the requests that are
// no model call the way a model endpoint does, so an agent's start-up
// probes succeed: POST /v1/messages/count_tokens gets {"input_tokens": N},
// GET /v1/models the models the channel declares (modelList), HEAD of any
// path and GET / or /health {"ok": true}; anything else is a 404 with
// Anthropic's error document.
func (c *Channel) serveSideRoute(w http.ResponseWriter, r *http.Request, raw []byte) {
	p := strings.TrimPrefix(r.URL.Path, "/v1")
	switch {
	case r.Method == http.MethodPost && p == "/messages/count_tokens":
		writeJSON(w, http.StatusOK, map[string]any{"input_tokens": max(1, len(raw)/4)})
	case r.Method == http.MethodGet && strings.HasPrefix(p, "/models"):
		writeJSON(w, http.StatusOK, c.modelList(Anthropic))
	case r.Method == http.MethodHead || (r.Method == http.MethodGet && (r.URL.Path == "/" || p == "/health")):
		writeJSON(w, http.StatusOK, map[string]any{"ok": true})
	default:
		writeJSON(w, http.StatusNotFound, errorDoc(Anthropic, http.StatusNotFound, "mockllm (all): no route "+r.Method+" "+r.URL.Path))
	}
}

// readBody reads a request body of at most 64 MiB, decoding a gzip or
// deflate Content-Encoding (a body that does not decode is kept as sent).
func readBody(r *http.Request) []byte {
	raw, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	var dec io.ReadCloser
	switch strings.ToLower(r.Header.Get("Content-Encoding")) {
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return raw
		}
		dec = zr
	case "deflate": // RFC 9110 §8.4.1.2: the zlib format
		zr, err := zlib.NewReader(bytes.NewReader(raw))
		if err != nil {
			return raw
		}
		dec = zr
	default:
		return raw
	}
	defer dec.Close()
	out, err := io.ReadAll(io.LimitReader(dec, 64<<20))
	if err != nil {
		return raw
	}
	return out
}
