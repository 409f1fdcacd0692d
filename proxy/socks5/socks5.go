// Package socks5 is the client half of SOCKS version 5 (RFC 1928) with
// username/password authentication (RFC 1929), as the proxy's data path
// needs it: one CONNECT over a connection the caller dialled, exact reads
// (no byte after the reply is consumed, so the tunnel starts clean), and
// errors that say whose failure it is:
//
//   - *ReplyError: the gateway answered CONNECT with a well-formed failure
//     reply. The gateway is alive; the destination is not reachable through
//     it. HostScoped tells the caller to cool only this destination.
//   - any other error (no acceptable method, authentication refused, a
//     malformed or truncated answer, the gateway closing or staying silent):
//     the gateway's own failure. Step says how far the handshake got.
//
// Own code rather than golang.org/x/net/proxy because that client reports
// reply codes only as error text (classification must not read strings,
// STYLE.md), resolves nothing locally (its socks5:// is socks5h://), and
// starts a goroutine per handshake for context cancellation; see
// docs/BENCHMARKS.md for the measured difference.
package socks5

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"
)

// Protocol constants (RFC 1928 §3-§6, RFC 1929 §2).
const (
	version5        = 0x05
	authVersion     = 0x01 // RFC 1929 sub-negotiation version
	methodNone      = 0x00 // NO AUTHENTICATION REQUIRED
	methodPassword  = 0x02 // USERNAME/PASSWORD
	methodNoAccept  = 0xFF // NO ACCEPTABLE METHODS
	cmdConnect      = 0x01
	atypIPv4        = 0x01
	atypDomain      = 0x03
	atypIPv6        = 0x04
	maxField        = 255 // ULEN, PLEN and a domain name's length are one byte
	maxRequestBytes = 4 + 1 + maxField + 2
)

// Step is how far a handshake got when it failed.
type Step string

// The steps of a handshake, in order.
const (
	// StepGreeting is the method selection (RFC 1928 §3).
	StepGreeting Step = "greeting"
	// StepAuth is the username/password sub-negotiation (RFC 1929 §2).
	StepAuth Step = "auth"
	// StepConnect is the CONNECT request and its reply (RFC 1928 §4, §6).
	StepConnect Step = "connect"
)

// Auth is a username/password pair for RFC 1929: User 1-255 bytes,
// Password at most 255 (RFC 1929 asks for 1-255; an empty one is sent as
// PLEN 0, as curl and golang.org/x/net/proxy do). An Auth with both empty
// is treated as no credentials.
type Auth struct {
	User, Password string
}

// Reply is the REP field of a SOCKS5 reply (RFC 1928 §6).
type Reply byte

// Reply codes of RFC 1928 §6; 0x09-0xFF are unassigned.
const (
	Succeeded               Reply = 0x00
	GeneralFailure          Reply = 0x01
	NotAllowed              Reply = 0x02
	NetworkUnreachable      Reply = 0x03
	HostUnreachable         Reply = 0x04
	ConnectionRefused       Reply = 0x05
	TTLExpired              Reply = 0x06
	CommandNotSupported     Reply = 0x07
	AddressTypeNotSupported Reply = 0x08
)

var replyText = [...]string{
	"succeeded", "general SOCKS server failure", "connection not allowed by ruleset",
	"network unreachable", "host unreachable", "connection refused", "TTL expired",
	"command not supported", "address type not supported",
}

// String is the RFC 1928 §6 wording with the code: "0x05 connection refused".
func (r Reply) String() string {
	if int(r) < len(replyText) {
		return fmt.Sprintf("0x%02x %s", byte(r), replyText[r])
	}
	return fmt.Sprintf("0x%02x unassigned", byte(r))
}

// ReplyError is a well-formed failure reply to CONNECT (REP != 0).
type ReplyError struct {
	Code Reply
}

// Error is "gateway refused CONNECT: 0x04 host unreachable".
func (e *ReplyError) Error() string { return "gateway refused CONNECT: " + e.Code.String() }

// HostScoped reports whether the failure concerns the destination rather
// than the gateway (SPEC GW-7, CD-1). Every failure code is, because the
// gateway answered in protocol: network/host unreachable, refused and TTL
// expired are the destination's state; "general failure" is what common
// servers (microsocks, dante) answer when the name does not resolve or the
// connect fails for a reason they do not map; "not allowed by ruleset" and
// "address type not supported" refuse this destination, not all. The one
// exception is "command not supported": a gateway that cannot CONNECT is of
// no use for any host.
func (e *ReplyError) HostScoped() bool { return e.Code != CommandNotSupported }

// Error is a handshake failure that is the gateway's own (anything but a
// well-formed failure reply): the Step it happened in and the cause.
type Error struct {
	Step Step
	Err  error
}

// Error is "socks5 STEP: cause".
func (e *Error) Error() string { return "socks5 " + string(e.Step) + ": " + e.Err.Error() }

// Unwrap returns the cause (context errors, net errors, ErrAuthRefused …).
func (e *Error) Unwrap() error { return e.Err }

// Errors a handshake can carry inside *Error.
var (
	// ErrNoAcceptableMethod: the gateway accepts none of the offered
	// methods (it wants credentials we do not have, or other ones).
	ErrNoAcceptableMethod = errors.New("gateway accepts none of the offered authentication methods")
	// ErrAuthRefused: RFC 1929 status other than success (wrong user or
	// password).
	ErrAuthRefused = errors.New("gateway refused the user name or password")
	// ErrMalformed: the bytes are not a SOCKS5 answer.
	ErrMalformed = errors.New("malformed answer (not a SOCKS5 gateway?)")
)

// Connect runs the client handshake on conn, already connected to a SOCKS5
// gateway, for a tunnel to host:port. host is an IP literal (sent as
// ATYP IPv4/IPv6; no brackets, no zone) or a domain name the gateway
// resolves (ATYP DOMAINNAME, at most 255 bytes). With auth (non-nil, not
// both fields empty) both NO AUTHENTICATION and USERNAME/PASSWORD are
// offered, else only the former.
//
// ctx bounds the whole handshake: its deadline is set on conn and its
// cancellation interrupts a blocked read or write; the deadline is cleared
// on success. Connect reads exactly the answer's bytes, so conn carries the
// tunnel afterwards. It does not close conn. Errors: *ReplyError or *Error
// (see the package comment); bad arguments are *Error with StepGreeting
// and nothing is sent.
func Connect(ctx context.Context, conn net.Conn, host string, port int, auth *Auth) (err error) {
	if auth != nil && auth.User == "" && auth.Password == "" {
		auth = nil
	}
	var buf [maxRequestBytes]byte
	req, err := appendConnect(buf[:0], host, port)
	if err != nil {
		return &Error{Step: StepGreeting, Err: err}
	}
	if auth != nil && (len(auth.User) == 0 || len(auth.User) > maxField || len(auth.Password) > maxField) {
		return &Error{Step: StepGreeting, Err: errors.New("user name must be 1-255 bytes and password at most 255 (RFC 1929)")}
	}
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer func() {
		switch {
		case !stop() && err == nil:
			// Cancelled at the last moment: the forced deadline may be set.
			err = &Error{Step: StepConnect, Err: context.Cause(ctx)}
		case err != nil:
			err = withCtx(ctx, err)
		default:
			conn.SetDeadline(time.Time{})
		}
	}()

	// Method selection (RFC 1928 §3). The request is kept in buf's tail
	// while the head carries the greeting and answers.
	var g [4]byte
	greeting := append(g[:0], version5, 1, methodNone)
	if auth != nil {
		greeting = append(g[:0], version5, 2, methodNone, methodPassword)
	}
	var ans [2]byte
	if _, err := conn.Write(greeting); err != nil {
		return &Error{Step: StepGreeting, Err: err}
	}
	if _, err := io.ReadFull(conn, ans[:]); err != nil {
		return &Error{Step: StepGreeting, Err: eofMeansClosed(err)}
	}
	switch {
	case ans[0] != version5:
		return &Error{Step: StepGreeting, Err: ErrMalformed}
	case ans[1] == methodNoAccept:
		return &Error{Step: StepGreeting, Err: ErrNoAcceptableMethod}
	case ans[1] == methodPassword && auth != nil:
		if err := password(conn, auth); err != nil {
			return err
		}
	case ans[1] != methodNone:
		return &Error{Step: StepGreeting, Err: fmt.Errorf("gateway chose method 0x%02x, which was not offered", ans[1])}
	}

	if _, err := conn.Write(req); err != nil {
		return &Error{Step: StepConnect, Err: err}
	}
	code, err := ReadReply(conn)
	if err != nil {
		return &Error{Step: StepConnect, Err: eofMeansClosed(err)}
	}
	if code != Succeeded {
		return &ReplyError{Code: code}
	}
	return nil
}

// password runs the RFC 1929 sub-negotiation.
func password(conn net.Conn, a *Auth) error {
	var buf [3 + 2*maxField]byte
	b := append(buf[:0], authVersion, byte(len(a.User)))
	b = append(b, a.User...)
	b = append(b, byte(len(a.Password)))
	b = append(b, a.Password...)
	if _, err := conn.Write(b); err != nil {
		return &Error{Step: StepAuth, Err: err}
	}
	var ans [2]byte
	if _, err := io.ReadFull(conn, ans[:]); err != nil {
		return &Error{Step: StepAuth, Err: eofMeansClosed(err)}
	}
	// RFC 1929 says VER 0x01; some servers echo 0x05. Both are accepted,
	// anything else is not a SOCKS answer.
	if ans[0] != authVersion && ans[0] != version5 {
		return &Error{Step: StepAuth, Err: ErrMalformed}
	}
	if ans[1] != 0x00 {
		return &Error{Step: StepAuth, Err: ErrAuthRefused}
	}
	return nil
}

// appendConnect appends the CONNECT request for host:port (RFC 1928 §4-§5).
func appendConnect(b []byte, host string, port int) ([]byte, error) {
	if port < 1 || port > 65535 {
		return nil, fmt.Errorf("bad port %d", port)
	}
	b = append(b, version5, cmdConnect, 0x00)
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Zone() != "" {
			return nil, errors.New("IPv6 zone ids cannot be sent to a gateway")
		}
		if ip.Is4() || ip.Is4In6() {
			a := ip.Unmap().As4()
			b = append(b, atypIPv4)
			b = append(b, a[:]...)
		} else {
			a := ip.As16()
			b = append(b, atypIPv6)
			b = append(b, a[:]...)
		}
	} else {
		if host == "" || len(host) > maxField {
			return nil, errors.New("destination name must be 1-255 bytes")
		}
		b = append(b, atypDomain, byte(len(host)))
		b = append(b, host...)
	}
	return append(b, byte(port>>8), byte(port)), nil
}

// ReadReply reads one reply to a request (RFC 1928 §6: VER REP RSV ATYP
// BND.ADDR BND.PORT) from r and returns REP. It reads exactly the reply's
// bytes when REP is 0 (the bound address is read and discarded) and only the
// first four on a failure code (the gateway closes then, RFC 1928 §6).
// RSV is not checked (robustness). Errors: ErrMalformed for a version
// other than 5 or an unknown address type; io.ErrUnexpectedEOF or the
// reader's error for a short reply.
func ReadReply(r io.Reader) (Reply, error) {
	var b [4 + 1 + maxField + 2]byte
	if _, err := io.ReadFull(r, b[:4]); err != nil {
		return 0, err
	}
	if b[0] != version5 {
		return 0, ErrMalformed
	}
	code := Reply(b[1])
	if code != Succeeded {
		return code, nil
	}
	var n int
	switch b[3] {
	case atypIPv4:
		n = 4 + 2
	case atypIPv6:
		n = 16 + 2
	case atypDomain:
		if _, err := io.ReadFull(r, b[4:5]); err != nil {
			return 0, err
		}
		n = int(b[4]) + 2
	default:
		return 0, ErrMalformed
	}
	if _, err := io.ReadFull(r, b[5:5+n]); err != nil {
		return 0, err
	}
	return code, nil
}

// eofMeansClosed names a clean EOF in the middle of the handshake.
func eofMeansClosed(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("gateway closed the connection: %w", err)
	}
	return err
}

// withCtx prefers the context's error (deadline, cancel) over the I/O
// error the forced deadline produced, keeping the structure of err.
func withCtx(ctx context.Context, err error) error {
	ce := ctx.Err()
	var ne net.Error
	if dl, ok := ctx.Deadline(); ce == nil && ok && !time.Now().Before(dl) && errors.As(err, &ne) && ne.Timeout() {
		// conn's deadline (the context's) fired before the context's own
		// timer did.
		ce = context.DeadlineExceeded
	}
	if ce == nil {
		return err
	}
	var e *Error
	if errors.As(err, &e) {
		return &Error{Step: e.Step, Err: fmt.Errorf("%w (%v)", ce, e.Err)}
	}
	return err
}
