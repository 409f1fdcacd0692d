package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http/httputil"
	"strconv"
	"strings"
	"sync"
	"time"
)

// streamTarget is one way a streaming client reaches the mock channel:
// direct, or through dual-proxy's pool (scenario 7).
type streamTarget struct {
	addr string // "host:port" the client connects to
	path string // request path
	api  string // the client's API: apiAnthropic or apiChat
}

// poolRequestBytes is the size of the request body of scenario 7: a
// system prompt and one user turn, in the range of an agent's later turns
// (Claude Code's first call is larger, a one-line chat smaller).
const poolRequestBytes = 16 << 10

// body is the streaming request of t's API, about poolRequestBytes long.
func (t streamTarget) body() []byte {
	system := strings.Repeat("You are a coding agent; answer briefly. ", poolRequestBytes/40)
	if t.api == apiChat {
		return []byte(`{"model":"m","stream":true,"stream_options":{"include_usage":true},"max_tokens":1024,"messages":[{"role":"system","content":"` +
			system + `"},{"role":"user","content":"say something"}]}`)
	}
	return []byte(`{"model":"m","stream":true,"max_tokens":1024,"system":"` + system + `","messages":[{"role":"user","content":"say something"}]}`)
}

// head is the request head for a body of n bytes; session names the
// client's conversation (X-Session-Id, the first session identity the
// pool looks for, so every client is its own session).
func (t streamTarget) head(n int, session string) []byte {
	h := "POST " + t.path + " HTTP/1.1\r\nHost: " + t.addr + "\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\n" +
		"X-Session-Id: " + session + "\r\nContent-Length: " + strconv.Itoa(n) + "\r\n"
	if t.api == apiAnthropic {
		h += "Anthropic-Version: 2023-06-01\r\nX-Api-Key: sk-client\r\n"
	} else {
		h += "Authorization: Bearer sk-client\r\n"
	}
	return []byte(h + "\r\n")
}

// streamConn is a client's keep-alive connection (nil c: none open).
type streamConn struct {
	c  net.Conn
	br *bufio.Reader
}

func (sc *streamConn) close() {
	if sc.c != nil {
		sc.c.Close()
		sc.c, sc.br = nil, nil
	}
}

// streamResult is one streamed call as the client saw it: time from the
// request (dial included when a new connection was needed) to the first
// text delta, and each delta's delay from the mock's stamp to the read.
type streamResult struct {
	ttft   time.Duration
	delays []time.Duration
}

// stream sends one streaming request on sc (dialling when it has no
// connection) and reads the answer to its end. It fails unless every one
// of the poolEvents deltas arrived, in order, and the stream ended with its
// API's end event. The connection is kept when the answer allows it.
func (t streamTarget) stream(sc *streamConn, req []byte, delays []time.Duration) (streamResult, error) {
	deadline := time.Now().Add(poolStreamLen + opTimeout)
	t0 := monoNow()
	if sc.c == nil {
		c, err := net.DialTimeout("tcp", t.addr, opTimeout)
		if err != nil {
			return streamResult{}, err
		}
		sc.c, sc.br = c, bufio.NewReaderSize(c, 16<<10)
	}
	sc.c.SetDeadline(deadline)
	if _, err := sc.c.Write(req); err != nil {
		sc.close()
		return streamResult{}, fmt.Errorf("request: %w", err)
	}
	res, keep, err := t.read(sc.br, t0, delays)
	if err != nil || !keep {
		sc.close()
	}
	return res, err
}

// read reads one streamed answer from br; t0 is when the request started.
func (t streamTarget) read(br *bufio.Reader, t0 int64, delays []time.Duration) (streamResult, bool, error) {
	res := streamResult{delays: delays}
	status, fr, err := readHead(br)
	if err != nil {
		return res, false, fmt.Errorf("response head: %w", err)
	}
	var body io.Reader = br
	switch {
	case fr.chunked:
		body = httputil.NewChunkedReader(br)
	case fr.length >= 0:
		body = io.LimitReader(br, fr.length)
	default:
		fr.close = true
	}
	lines := bufio.NewReaderSize(body, 64<<10)
	if status != 200 {
		b, _ := io.ReadAll(io.LimitReader(lines, 512))
		return res, false, fmt.Errorf("status %d: %s", status, bytes.TrimSpace(b))
	}
	end := []byte("event: message_stop")
	if t.api == apiChat {
		end = []byte("data: [DONE]")
	}
	ended := false
	for {
		line, err := lines.ReadSlice('\n')
		now := monoNow()
		if i := bytes.IndexByte(line, '@'); i >= 0 {
			j := bytes.IndexByte(line[i+1:], '@')
			stamp, perr := strconv.ParseInt(string(line[i+1:i+1+max(j, 0)]), 10, 64)
			if j < 0 || perr != nil {
				return res, false, fmt.Errorf("delta %d: no stamp in %q", len(res.delays)-len(delays), line)
			}
			if len(res.delays) == len(delays) {
				res.ttft = time.Duration(now - t0)
			}
			res.delays = append(res.delays, time.Duration(now-stamp))
		}
		if bytes.HasPrefix(line, end) {
			ended = true
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return res, false, fmt.Errorf("after %d deltas: %w", len(res.delays)-len(delays), err)
		}
	}
	if n := len(res.delays) - len(delays); n != poolEvents || !ended {
		return res, false, fmt.Errorf("%d of %d deltas, end event seen: %v", n, poolEvents, ended)
	}
	if fr.chunked { // the trailer section ends with an empty line
		for {
			l, err := br.ReadSlice('\n')
			if err != nil {
				return res, false, err
			}
			if len(bytes.TrimRight(l, "\r\n")) == 0 {
				break
			}
		}
	}
	return res, !fr.close, nil
}

// streamRound is what one round of concurrent streams measured: the TTFT
// of every stream that started inside the measured window, the delay of
// each of its deltas, every delta of the round (for CPU per event) and the
// failures.
type streamRound struct {
	ttft, delays []time.Duration
	events       int
	errs         int
	lastErr      error
}

// runStreams keeps conc streams of t going: worker i starts after
// i/conc of a stream's length (so calls arrive spread out, not in one
// burst) and starts its next stream as soon as one ends, until the round
// is over. Streams starting in the first poolStreamLen (the ramp, while
// concurrency builds up) are not measured; the window is the next measure.
// It returns when every stream started has ended.
func runStreams(t streamTarget, conc int, measure time.Duration) streamRound {
	body := t.body()
	start := time.Now()
	from, until := start.Add(poolStreamLen), start.Add(poolStreamLen+measure)
	var mu sync.Mutex
	var out streamRound
	var wg sync.WaitGroup
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := append(t.head(len(body), "bench-"+strconv.Itoa(w)), body...)
			time.Sleep(time.Duration(w) * poolStreamLen / time.Duration(conc))
			var sc streamConn
			defer sc.close()
			var ttft, delays []time.Duration
			events, errs := 0, 0
			var last error
			for s := time.Now(); s.Before(until); s = time.Now() {
				n := len(delays)
				r, err := t.stream(&sc, req, delays)
				events += len(r.delays) - n
				if err != nil {
					errs, last, delays = errs+1, err, delays[:n]
					time.Sleep(poolInterval) // no busy loop against a failing path
					continue
				}
				if s.Before(from) {
					delays = delays[:n]
					continue
				}
				ttft, delays = append(ttft, r.ttft), r.delays
			}
			mu.Lock()
			defer mu.Unlock()
			out.ttft, out.delays = append(out.ttft, ttft...), append(out.delays, delays...)
			out.events, out.errs = out.events+events, out.errs+errs
			if last != nil {
				out.lastErr = last
			}
		}()
	}
	wg.Wait()
	if len(out.ttft) == 0 && out.lastErr == nil {
		out.lastErr = errors.New("no stream started in the measured window")
	}
	return out
}
