package pool

import (
	"bytes"
	"context"
	"net/http"
	"strings"

	"github.com/dual-proxy/dual-proxy/internal/lib/httpmsg"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// memberURL joins a channel's base_url and an endpoint path such as
// "/v1/chat/completions". A base_url that already ends in a version segment
// ("https://api.openai.com/v1", "…/api/paas/v4"), as OpenAI-style base URLs
// usually do, replaces the path's leading "/v1".
func memberURL(base, path string) string {
	base = strings.TrimRight(base, "/")
	if i := strings.LastIndexByte(base, '/'); i >= 0 && isVersion(base[i+1:]) {
		if rest, ok := strings.CutPrefix(path, "/v1/"); ok {
			return base + "/" + rest
		}
	}
	return base + path
}

// isVersion matches "v" followed by one or more digits.
func isVersion(seg string) bool {
	if len(seg) < 2 || seg[0] != 'v' {
		return false
	}
	for _, r := range seg[1:] {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// dropRequestHeaders are removed from a pool request besides the hop-by-hop
// fields (httpmsg.RemoveHopByHop, RFC 9110 §7.6.1): Host and Content-Length
// (set for the member's request), the client's credentials in every header APIs
// take them in (x-api-key, Authorization, Azure's api-key, Gemini's
// x-goog-api-key; replaced by the member's key), the client's Accept-Encoding
// (the pool must read the stream; Transport asks for gzip and decodes it) and
// cookies.
var dropRequestHeaders = []string{"Host", "Content-Length",
	"X-Api-Key", "Authorization", "Api-Key", "X-Goog-Api-Key", "Accept-Encoding", "Cookie"}

// memberRequest builds the request to the attempt's member (SPEC POOL-2,
// POOL-12): the model rewritten, the effort mapped, an output limit above the
// member's lowered, the client's headers minus hop-by-hop and credentials, the
// member's key, the client's query kept without the pool token (memberQuery). A translated
// call gets the body, path and query of the member's API.
func (a *attempt) memberRequest(ctx context.Context) (*http.Request, error) {
	c, ch := a.c, a.ch
	effort := c.memberEffort(ch)
	var body []byte
	var err error
	if a.rt.translate {
		body, err = c.translatedBody(a.rt, ch, effort)
	} else {
		body, err = c.fl.RewriteBody(c.ci, c.target(ch.ID), effort)
		if err == nil {
			body = c.passthroughLimit(ch.ID, c.stateFor(ch.ID, body))
		}
	}
	if err != nil {
		return nil, err
	}
	if c.oneMember {
		c.ci.Release() // sent once: let it go as soon as the Transport has written it
	}
	path, query := c.memberPath(a.rt, ch)
	u := memberURL(ch.BaseURL, path)
	if query != "" {
		u += "?" + query
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, vs := range c.r.Header {
		req.Header[k] = append([]string(nil), vs...)
	}
	httpmsg.RemoveHopByHop(req.Header)
	for _, k := range dropRequestHeaders {
		req.Header.Del(k)
	}
	dropBrowserHeaders(req.Header)
	req.Header.Add("Via", c.p.via.Entry()) // loop detection (Pool.via)
	if tok := c.p.opts.Token; tok != "" {
		for k, vs := range req.Header {
			for _, v := range vs {
				if carriesToken(v, tok) {
					delete(req.Header, k)
					break
				}
			}
		}
	}
	if a.rt.translate {
		req.Header.Set("Content-Type", "application/json")
		a.rt.fl.SetTranslatedHeaders(req.Header)
	}
	ch.Authorize(req.Header)
	req.ContentLength = int64(len(body))
	return req, nil
}

// copyResponseHeaders copies an upstream's end-to-end headers, every
// configured key scrubbed from their values (POOL-15).
func copyResponseHeaders(dst, src http.Header, s config.Scrubber) {
	for k, vs := range src {
		dst[k] = append([]string(nil), vs...)
	}
	httpmsg.RemoveHopByHop(dst)
	for _, k := range dropResponseHeaders {
		dst.Del(k)
	}
	s.ScrubHeader(dst)
}
