package dial

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/lib/netutil"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
)

// maxConnectResponse bounds the gateway's CONNECT answer head (bytes).
const maxConnectResponse = 16 << 10

// Connect sends "CONNECT target" over conn (already connected to gateway c)
// and reads the answer within ctx. On 2xx it returns conn itself, or a
// wrapper that first returns bytes the gateway sent after its answer. It does
// not close conn on error. Errors as documented on Open.
func Connect(ctx context.Context, conn net.Conn, c candidate.Candidate, target string) (net.Conn, error) {
	fail := func(tier candidate.Tier, status int, err error) error {
		return &candidate.PathError{Candidate: c, Phase: candidate.PhaseConnectResponse, Tier: tier, Status: status, Err: err}
	}
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	var b strings.Builder
	b.Grow(96)
	b.WriteString("CONNECT ")
	b.WriteString(target)
	b.WriteString(" HTTP/1.1\r\nHost: ")
	b.WriteString(target)
	b.WriteString("\r\n")
	if auth := c.ProxyAuthorization(); auth != "" {
		b.WriteString("Proxy-Authorization: ")
		b.WriteString(auth)
		b.WriteString("\r\n")
	}
	if via, _ := ctx.Value(viaKey{}).(string); via != "" {
		b.WriteString("Via: ")
		b.WriteString(via)
		b.WriteString("\r\n")
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(conn, b.String()); err != nil {
		return nil, fail(candidate.TierGateway, 0, fmt.Errorf("write CONNECT: %w", ctxErr(ctx, err)))
	}
	br := bufio.NewReaderSize(conn, 4096)
	status, err := readConnectAnswer(br)
	if err != nil {
		return nil, fail(candidate.TierGateway, 0, ctxErr(ctx, err))
	}
	if status < 200 || status > 299 {
		tier := candidate.TierHost
		if status == http.StatusProxyAuthRequired || status == http.StatusUnauthorized || status == http.StatusLoopDetected {
			tier = candidate.TierGateway // 407, tinyproxy's 401; 508: the gateway leads back to us
		}
		return nil, fail(tier, status, fmt.Errorf("gateway answered CONNECT with %d", status))
	}
	conn.SetDeadline(time.Time{})
	if n := br.Buffered(); n > 0 {
		early, _ := br.Peek(n)
		return &netutil.PrefixConn{Conn: conn, Prefix: append([]byte(nil), early...)}, nil
	}
	return conn, nil
}

// readConnectAnswer reads a response head and returns its status. The
// answer to CONNECT has no body on 2xx (RFC 9110 §9.3.6); on other statuses
// the body is not read, since the connection is discarded.
func readConnectAnswer(br *bufio.Reader) (int, error) {
	total := 0
	status := 0
	first := true
	for {
		line, err := br.ReadSlice('\n')
		total += len(line)
		if err != nil {
			if errors.Is(err, bufio.ErrBufferFull) || total > maxConnectResponse {
				return 0, errors.New("CONNECT answer head too large")
			}
			if errors.Is(err, io.EOF) {
				return 0, errors.New("gateway closed the connection before answering CONNECT")
			}
			return 0, err
		}
		if total > maxConnectResponse {
			return 0, errors.New("CONNECT answer head too large")
		}
		s := strings.TrimRight(string(line), "\r\n")
		if first {
			// "HTTP/1.1 200 Connection established"
			proto, rest, ok := strings.Cut(s, " ")
			if !ok || !strings.HasPrefix(proto, "HTTP/1.") || len(rest) < 3 {
				return 0, errors.New("malformed CONNECT answer")
			}
			if len(rest) > 3 && rest[3] != ' ' {
				return 0, errors.New("malformed CONNECT answer status") // "2000" is not 200
			}
			code := rest[:3]
			if code[0] < '1' || code[0] > '5' || code[1] < '0' || code[1] > '9' || code[2] < '0' || code[2] > '9' {
				return 0, errors.New("malformed CONNECT answer status")
			}
			status = int(code[0]-'0')*100 + int(code[1]-'0')*10 + int(code[2]-'0')
			first = false
			continue
		}
		if s == "" {
			if status >= 100 && status < 200 {
				first = true // skip interim answers, read the final one
				continue
			}
			return status, nil
		}
	}
}

// ctxErr prefers the context's error (deadline, cancel) over the I/O error
// the forced deadline produced.
func ctxErr(ctx context.Context, err error) error {
	if ce := ctx.Err(); ce != nil {
		return fmt.Errorf("%w (%v)", ce, err)
	}
	return err
}

// viaKey carries the Via value for CONNECT requests in a context.
type viaKey struct{}

// WithVia returns ctx carrying the Via field value ("1.1 name, …", RFC
// 9110 §7.6.3) that Connect sends with CONNECT, for loop detection.
func WithVia(ctx context.Context, via string) context.Context {
	return context.WithValue(ctx, viaKey{}, via)
}
