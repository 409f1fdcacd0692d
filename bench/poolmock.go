package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// The fixed shape of scenario 7's streamed answer: the mock
// channel writes the response head and the preamble at once, then
// poolEvents text deltas, the first poolFirst after the request and the
// rest every poolInterval (absolute schedule, so a late event does not
// delay the ones after it), then the end events.
const (
	poolEvents   = 50
	poolFirst    = 5 * time.Millisecond
	poolInterval = 5 * time.Millisecond
)

// poolStreamLen is how long one mock stream lasts.
const poolStreamLen = poolFirst + (poolEvents-1)*poolInterval

// The two APIs the mock channel speaks, told by the request path.
const (
	apiAnthropic = "anthropic" // POST …/v1/messages: Messages SSE
	apiChat      = "chat"      // POST …/chat/completions: Chat Completions SSE
)

// streamMock is scenario 7's model channel: a raw-socket HTTP/1.1 server
// that answers POST …/v1/messages with an Anthropic Messages stream and
// POST …/chat/completions with a Chat Completions stream, both chunked and
// keep-alive, every text delta stamped "@<CLOCK_MONOTONIC ns>@" at the
// moment it is written (monoNow, shared by the processes of one machine on
// Linux) so the client can compute each event's delay. Raw sockets keep the
// mock cheap, as the plain origin is; it runs in its own process
// (-poolmock-serve) so dual-proxy's /proc CPU numbers are its own.
type streamMock struct {
	ln    net.Listener
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// newStreamMock listens on addr ("127.0.0.1:0") and serves until close.
func newStreamMock(addr string) (*streamMock, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	m := &streamMock{ln: ln, conns: map[net.Conn]struct{}{}}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			m.mu.Lock()
			m.conns[c] = struct{}{}
			m.mu.Unlock()
			m.wg.Add(1)
			go func() {
				defer m.wg.Done()
				m.serve(c)
				m.mu.Lock()
				delete(m.conns, c)
				m.mu.Unlock()
				c.Close()
			}()
		}
	}()
	return m, nil
}

func (m *streamMock) addr() string { return m.ln.Addr().String() }

// close stops the listener and closes every connection.
func (m *streamMock) close() {
	m.ln.Close()
	m.mu.Lock()
	for c := range m.conns {
		c.Close()
	}
	m.mu.Unlock()
	m.wg.Wait()
}

// serveStreamMock runs the mock channel on 127.0.0.1:0 until SIGTERM or
// SIGINT (the bench's -poolmock-serve child); it logs "msg=listening
// addr=…" like dual-proxy so the bench finds the port.
func serveStreamMock() error {
	m, err := newStreamMock("127.0.0.1:0")
	if err != nil {
		return err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	fmt.Fprintf(os.Stderr, "msg=listening addr=%s\n", m.addr())
	<-sig
	m.close()
	return nil
}

// serve answers requests on c until the client closes or asks to close.
func (m *streamMock) serve(c net.Conn) {
	br := bufio.NewReaderSize(c, 32<<10)
	buf := make([]byte, 0, 1024)
	for {
		path, keep, body, err := readStreamRequest(br)
		if err != nil {
			return
		}
		api := ""
		switch {
		case bytes.HasSuffix(path, []byte("/v1/messages")):
			api = apiAnthropic
		case bytes.HasSuffix(path, []byte("/chat/completions")):
			api = apiChat
		default:
			msg := "mock channel: no route " + string(path) + "\n"
			fmt.Fprintf(c, "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s", len(msg), msg)
			continue
		}
		usage := bytes.Contains(body, []byte(`"include_usage":true`))
		if buf, err = writeMockStream(c, buf, api, usage, keep); err != nil || !keep {
			return
		}
	}
}

// readStreamRequest reads one request head and its Content-Length body; it
// returns the target, whether the connection stays open and the body.
func readStreamRequest(br *bufio.Reader) (target []byte, keep bool, body []byte, err error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return nil, false, nil, err
	}
	f := bytes.Fields(line)
	if len(f) != 3 {
		return nil, false, nil, errors.New("bad request line")
	}
	target, keep = append([]byte(nil), f[1]...), bytes.Equal(f[2], []byte("HTTP/1.1"))
	cl := 0
	for i := 0; i < 200; i++ {
		l, err := br.ReadSlice('\n')
		if err != nil {
			return nil, false, nil, err
		}
		l = bytes.TrimRight(l, "\r\n")
		if len(l) == 0 {
			body = make([]byte, cl)
			_, err := io.ReadFull(br, body)
			return target, keep, body, err
		}
		name, value, _ := bytes.Cut(l, []byte{':'})
		value = bytes.TrimSpace(value)
		switch {
		case asciiEqualFold(name, "Connection") && asciiEqualFold(value, "close"):
			keep = false
		case asciiEqualFold(name, "Content-Length"):
			if cl, err = strconv.Atoi(string(value)); err != nil || cl < 0 || cl > 64<<20 {
				return nil, false, nil, errors.New("bad Content-Length")
			}
		case asciiEqualFold(name, "Transfer-Encoding"):
			return nil, false, nil, errors.New("chunked request bodies are not supported")
		}
	}
	return nil, false, nil, errors.New("too many header lines")
}

// Wire text of the two streams; %s is the delta text.
const (
	anPreamble = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_bench\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":4000,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: ping\ndata: {\"type\": \"ping\"}\n\n"
	anDelta = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"%s\"}}\n\n"
	anEnd   = "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":50}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"

	chPreamble = "data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n"
	chDelta    = "data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"%s\"},\"finish_reason\":null}]}\n\n"
	chFinish   = "data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
	chUsage    = "data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":4000,\"completion_tokens\":50,\"total_tokens\":4050}}\n\n"
	chDone     = "data: [DONE]\n\n"
)

// writeMockStream writes one streamed answer of api on c, one write(2) per
// event (the head with the preamble, each delta, the end with the last
// chunk), as a server that flushes per event does. buf is scratch space,
// returned for reuse.
func writeMockStream(c net.Conn, buf []byte, api string, usage, keep bool) ([]byte, error) {
	t0 := time.Now()
	pre, delta, end := anPreamble, anDelta, anEnd
	if api == apiChat {
		pre, delta, end = chPreamble, chDelta, chFinish
		if usage {
			end += chUsage
		}
		end += chDone
	}
	head := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n"
	if !keep {
		head += "Connection: close\r\n"
	}
	buf = appendChunk(append(buf[:0], head+"\r\n"...), pre)
	if _, err := c.Write(buf); err != nil {
		return buf, err
	}
	i := bytes.Index([]byte(delta), []byte("%s"))
	for k := 0; k < poolEvents; k++ {
		time.Sleep(time.Until(t0.Add(poolFirst + time.Duration(k)*poolInterval)))
		stamp := strconv.AppendInt([]byte("@"), monoNow(), 10)
		ev := delta[:i] + string(stamp) + "@ " + delta[i+2:]
		if _, err := c.Write(appendChunk(buf[:0], ev)); err != nil {
			return buf, err
		}
	}
	buf = append(appendChunk(buf[:0], end), "0\r\n\r\n"...)
	_, err := c.Write(buf)
	return buf, err
}

// appendChunk appends s as one HTTP/1.1 chunk (RFC 9112 §7.1).
func appendChunk(b []byte, s string) []byte {
	b = strconv.AppendInt(b, int64(len(s)), 16)
	b = append(b, "\r\n"...)
	b = append(b, s...)
	return append(b, "\r\n"...)
}

// serveSSERelay runs the reference row of scenario 7 (the -sserelay-serve
// child): a minimal Go streaming reverse proxy to the mock channel at
// target — net/http server, httputil.ReverseProxy with a keep-alive
// Transport, the request body read first, a flush after every write; no
// parsing, no selection, no translation. It shows what any Go HTTP relay of an event stream costs on
// this machine, next to the pool's rows.
func serveSSERelay(target string) error {
	srv, ln, err := newSSERelay(target)
	if err != nil {
		return err
	}
	go srv.Serve(ln)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	fmt.Fprintf(os.Stderr, "msg=listening addr=%s\n", ln.Addr())
	<-sig
	return srv.Close()
}

// newSSERelay is serveSSERelay's server and its listener on 127.0.0.1:0.
func newSSERelay(target string) (*http.Server, net.Listener, error) {
	u, err := url.Parse("http://" + target)
	if err != nil {
		return nil, nil, err
	}
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(u)
		pr.Out.Host = pr.In.Host // as NewSingleHostReverseProxy's Director did
		// The body is read before the answer starts, as net/http asks of
		// HTTP/1.x handlers and as the pool does (it keeps it for
		// failover): a streamed body may no longer be readable once the
		// answer's head is flushed, and the Transport then drops the
		// channel connection mid-answer.
		b, _ := io.ReadAll(pr.In.Body)
		pr.Out.Body = io.NopCloser(bytes.NewReader(b))
	}}
	rp.FlushInterval = -1
	rp.Transport = &http.Transport{MaxIdleConnsPerHost: 1024, DisableCompression: true}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	return &http.Server{Handler: rp, ReadHeaderTimeout: opTimeout}, ln, nil
}
