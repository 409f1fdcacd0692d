package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/lib/netutil"
)

// opTimeout bounds every single load operation (dial, CONNECT, TLS, one
// request and its answer).
const opTimeout = 5 * time.Second

// path describes how a client reaches the origin: direct, or through an
// HTTP proxy (absolute-form for plain HTTP, CONNECT for TLS or when
// tunnel is set).
type path struct {
	proxy  string // proxy "host:port"; "" = direct
	origin string // origin "host:port"
	tls    bool   // HTTPS to the origin (through CONNECT when proxy is set)
	tunnel bool   // plain HTTP inside a CONNECT tunnel
	tlsCfg *tls.Config
}

// reqLine returns the request head for p and the origin path. With
// close, the request asks the origin to close after answering, so the
// origin closes first and TIME-WAIT stays on the server side instead of
// filling the client's ephemeral ports.
func (p path) reqLine(target string, close bool) []byte {
	conn := ""
	if close {
		conn = "Connection: close\r\n"
	}
	if p.proxy != "" && !p.tls && !p.tunnel {
		return []byte("GET http://" + p.origin + target + " HTTP/1.1\r\nHost: " + p.origin + "\r\n" + conn + "\r\n")
	}
	return []byte("GET " + target + " HTTP/1.1\r\nHost: " + p.origin + "\r\n" + conn + "\r\n")
}

// dial opens a connection on which requests for the origin can be written:
// TCP to the origin or proxy, CONNECT when tunnelling, then TLS when p.tls.
func (p path) dial(deadline time.Time) (net.Conn, *bufio.Reader, error) {
	addr := p.origin
	if p.proxy != "" {
		addr = p.proxy
	}
	d := net.Dialer{Deadline: deadline}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	c.SetDeadline(deadline)
	var conn net.Conn = c
	if p.proxy != "" && (p.tls || p.tunnel) {
		if conn, err = connectThrough(c, p.origin); err != nil {
			c.Close()
			return nil, nil, err
		}
	}
	if p.tls {
		cfg := p.tlsCfg.Clone()
		host, _, _ := net.SplitHostPort(p.origin)
		cfg.ServerName = host
		tc := tls.Client(conn, cfg)
		if err := tc.Handshake(); err != nil {
			c.Close()
			return nil, nil, fmt.Errorf("tls: %w", err)
		}
		conn = tc
	}
	return conn, bufio.NewReaderSize(conn, 16<<10), nil
}

// connectThrough sends CONNECT target on c and reads a 2xx answer. It
// returns c, or a wrapper holding bytes read past the answer.
func connectThrough(c net.Conn, target string) (net.Conn, error) {
	if _, err := io.WriteString(c, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n"); err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(c, 1024)
	status, _, err := readHead(br)
	if err != nil {
		return nil, fmt.Errorf("CONNECT answer: %w", err)
	}
	if status/100 != 2 {
		return nil, fmt.Errorf("CONNECT answered %d", status)
	}
	if n := br.Buffered(); n > 0 {
		b, _ := br.Peek(n)
		return &netutil.PrefixConn{Conn: c, Prefix: append([]byte(nil), b...)}, nil
	}
	return c, nil
}

// framing is how a response body is delimited.
type framing struct {
	length  int64 // -1 unknown
	chunked bool
	close   bool // Connection: close, or body delimited by close
}

// readHead reads a response status line and fields.
func readHead(br *bufio.Reader) (int, framing, error) {
	fr := framing{length: -1}
	line, err := br.ReadSlice('\n')
	if err != nil {
		return 0, fr, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, fr, errors.New("malformed status line")
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, fr, errors.New("malformed status")
	}
	if line[7] == '0' {
		fr.close = true
	}
	for i := 0; i < 200; i++ {
		l, err := br.ReadSlice('\n')
		if err != nil {
			return 0, fr, err
		}
		l = bytes.TrimRight(l, "\r\n")
		if len(l) == 0 {
			return status, fr, nil
		}
		name, value, _ := bytes.Cut(l, []byte{':'})
		value = bytes.TrimSpace(value)
		switch {
		case asciiEqualFold(name, "Content-Length"):
			fr.length, _ = strconv.ParseInt(string(value), 10, 64)
		case asciiEqualFold(name, "Transfer-Encoding"):
			fr.chunked = bytes.Contains(bytes.ToLower(value), []byte("chunked"))
		case asciiEqualFold(name, "Connection"), asciiEqualFold(name, "Proxy-Connection"):
			if asciiEqualFold(value, "close") {
				fr.close = true
			} else if asciiEqualFold(value, "keep-alive") {
				fr.close = false
			}
		}
	}
	return 0, fr, errors.New("too many header lines")
}

// readResponse reads one whole response and reports its status and
// whether the connection can carry another request.
func readResponse(br *bufio.Reader) (status int, reusable bool, err error) {
	status, fr, err := readHead(br)
	if err != nil {
		return 0, false, err
	}
	switch {
	case status == 204 || status == 304 || status < 200:
	case fr.chunked:
		if err := discardChunked(br); err != nil {
			return 0, false, err
		}
	case fr.length >= 0:
		if _, err := io.CopyN(io.Discard, br, fr.length); err != nil {
			return 0, false, err
		}
	default:
		if _, err := io.Copy(io.Discard, br); err != nil {
			return 0, false, err
		}
		return status, false, nil
	}
	return status, !fr.close, nil
}

// discardChunked reads a chunked body and its trailer section.
func discardChunked(br *bufio.Reader) error {
	for i := 0; i < 1<<20; i++ {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		line = bytes.TrimRight(line, "\r\n")
		if j := bytes.IndexByte(line, ';'); j >= 0 {
			line = line[:j]
		}
		n, err := strconv.ParseInt(string(bytes.TrimSpace(line)), 16, 64)
		if err != nil || n < 0 {
			return errors.New("bad chunk size")
		}
		if n == 0 {
			for k := 0; k < 100; k++ {
				l, err := br.ReadSlice('\n')
				if err != nil {
					return err
				}
				if len(bytes.TrimRight(l, "\r\n")) == 0 {
					return nil
				}
			}
			return errors.New("too many trailers")
		}
		if _, err := io.CopyN(io.Discard, br, n+2); err != nil {
			return err
		}
	}
	return errors.New("too many chunks")
}

// load describes one measured configuration: conc workers sending GET
// requests over p, either keep-alive or one new connection per request.
type load struct {
	p       path
	conc    int
	newConn bool // open (and TLS-handshake) a new connection per request
	target  string
	// mark, when set, is called as each measured round starts (1..n)
	// and once more when the last one ends (n+1), e.g. to read CPU time.
	mark func(round int)
}

// phases are warm-up (index 0) then the measured rounds.
type phases struct {
	warm   time.Duration
	round  time.Duration
	rounds int
}

// sample is what one round measured.
type sample struct {
	ops     int
	errs    int
	elapsed time.Duration
	lat     []time.Duration
}

// run drives l for the warm-up and every round and returns one sample per
// measured round. Every operation has a deadline; the whole run is bounded
// by the phase lengths plus opTimeout.
//
// One piece: the workers and the phase clock share the phase counter and
// the per-worker records; split, they would need a struct whose only job
// is to hold them.
func (l load) run(ph phases) ([]sample, error) {
	var phase atomic.Int32
	nph := ph.rounds + 1
	recs := make([]*loadRec, l.conc)
	var wg sync.WaitGroup
	req := l.p.reqLine(l.target, l.newConn)
	for w := 0; w < l.conc; w++ {
		r := &loadRec{lat: make([][]time.Duration, nph), errs: make([]int, nph)}
		for i := range r.lat {
			r.lat[i] = make([]time.Duration, 0, 4096)
		}
		recs[w] = r
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.worker(r, &phase, nph, req)
		}()
	}
	starts := make([]time.Time, nph+1)
	starts[0] = time.Now()
	time.Sleep(ph.warm)
	for i := 1; i <= ph.rounds; i++ {
		phase.Store(int32(i))
		starts[i] = time.Now()
		if l.mark != nil {
			l.mark(i)
		}
		time.Sleep(ph.round)
	}
	phase.Store(int32(nph))
	starts[nph] = time.Now()
	if l.mark != nil {
		l.mark(nph)
	}
	wg.Wait()
	return collectRounds(recs, starts, ph.rounds)
}

// loadRec is one worker's record: latencies and error counts per phase
// (phase 0 is the warm-up), and its last error.
type loadRec struct {
	lat  [][]time.Duration
	errs []int
	last error
}

// worker sends req over and over until phase reaches nph, recording each
// answer's latency (or its error) in the phase it ended in; a connection is
// reused while the answer allows it and l.newConn is off.
func (l load) worker(r *loadRec, phase *atomic.Int32, nph int, req []byte) {
	var c net.Conn
	var br *bufio.Reader
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	for {
		p := int(phase.Load())
		if p >= nph {
			return
		}
		t0 := time.Now()
		deadline := t0.Add(opTimeout)
		var err error
		if c == nil {
			c, br, err = l.p.dial(deadline)
		} else {
			c.SetDeadline(deadline)
		}
		reusable := false
		if err == nil {
			if _, err = c.Write(req); err == nil {
				var status int
				status, reusable, err = readResponse(br)
				if err == nil && status != 200 {
					err = fmt.Errorf("status %d", status)
				}
			}
		}
		d := time.Since(t0)
		if p = int(phase.Load()); p >= nph {
			return
		}
		if err != nil {
			r.errs[p]++
			r.last = err
			if c != nil {
				c.Close()
				c = nil
			}
			time.Sleep(5 * time.Millisecond) // bounded back-off, not synchronisation
			continue
		}
		r.lat[p] = append(r.lat[p], d)
		if !reusable || l.newConn {
			c.Close()
			c = nil
		}
	}
}

// collectRounds merges the workers' records into one sample per measured
// round (phases 1..rounds; starts holds each phase's start time) and
// returns the last error any worker saw.
func collectRounds(recs []*loadRec, starts []time.Time, rounds int) ([]sample, error) {
	out := make([]sample, rounds)
	var lastErr error
	for i := 1; i <= rounds; i++ {
		s := sample{elapsed: starts[i+1].Sub(starts[i])}
		for _, r := range recs {
			s.ops += len(r.lat[i])
			s.errs += r.errs[i]
			s.lat = append(s.lat, r.lat[i]...)
		}
		out[i-1] = s
	}
	for _, r := range recs {
		if r.last != nil {
			lastErr = r.last
		}
	}
	return out, lastErr
}
