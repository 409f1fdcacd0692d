package socks5

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// script is one exchange of a fake gateway: it expects to read want
// exactly, then writes answer (nil: writes nothing; close after all steps).
type script struct {
	want   []byte
	answer []byte
}

// serve runs steps on the server end of a pipe and reports the first
// mismatch (or nil) on the returned channel; the server end is closed at
// the end unless keep is set, in which case extra is written and the end
// is left open for the caller to read.
func serve(t *testing.T, srv net.Conn, steps []script) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		defer srv.Close()
		for i, s := range steps {
			got := make([]byte, len(s.want))
			if _, err := io.ReadFull(srv, got); err != nil {
				done <- err
				return
			}
			if !bytes.Equal(got, s.want) {
				done <- &mismatch{step: i, got: got, want: s.want}
				return
			}
			if s.answer != nil {
				if _, err := srv.Write(s.answer); err != nil {
					done <- err
					return
				}
			}
		}
		done <- nil
	}()
	return done
}

type mismatch struct {
	step      int
	got, want []byte
}

func (m *mismatch) Error() string {
	return fmt.Sprintf("step %d: got % x, want % x", m.step, m.got, m.want)
}

func dialCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var (
	greetNone = []byte{5, 1, 0}
	greetBoth = []byte{5, 2, 0, 2}
	pickNone  = []byte{5, 0}
	pickPass  = []byte{5, 2}
	okReply4  = []byte{5, 0, 0, 1, 127, 0, 0, 1, 0x1f, 0x90}
)

func TestConnectRequests(t *testing.T) {
	cases := []struct {
		name string
		host string
		port int
		want []byte
	}{
		{"GW-7/ipv4-atyp", "127.0.0.1", 443, []byte{5, 1, 0, 1, 127, 0, 0, 1, 1, 0xbb}},
		{"GW-7/ipv4-mapped-sent-as-ipv4", "::ffff:10.1.2.3", 80, []byte{5, 1, 0, 1, 10, 1, 2, 3, 0, 80}},
		{"GW-7/ipv6-atyp", "2001:db8::1", 8443, []byte{5, 1, 0, 4, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0x20, 0xfb}},
		{"GW-7/domain-atyp", "api.example.com", 443, append(append([]byte{5, 1, 0, 3, 15}, "api.example.com"...), 1, 0xbb)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cli, srv := net.Pipe()
			defer cli.Close()
			done := serve(t, srv, []script{{greetNone, pickNone}, {tc.want, okReply4}})
			if err := Connect(dialCtx(t), cli, tc.host, tc.port, nil); err != nil {
				t.Fatalf("Connect: %v", err)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestPasswordAuth(t *testing.T) {
	req := []byte{5, 1, 0, 1, 127, 0, 0, 1, 0, 80}
	sub := append(append(append([]byte{1, 6}, "gwuser"...), 6), "pa:ss@"...)
	t.Run("GW-7/rfc1929-success", func(t *testing.T) {
		cli, srv := net.Pipe()
		defer cli.Close()
		done := serve(t, srv, []script{{greetBoth, pickPass}, {sub, []byte{1, 0}}, {req, okReply4}})
		if err := Connect(dialCtx(t), cli, "127.0.0.1", 80, &Auth{User: "gwuser", Password: "pa:ss@"}); err != nil {
			t.Fatalf("Connect: %v", err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
	t.Run("GW-7/credentials-offered-but-gateway-needs-none", func(t *testing.T) {
		cli, srv := net.Pipe()
		defer cli.Close()
		done := serve(t, srv, []script{{greetBoth, pickNone}, {req, okReply4}})
		if err := Connect(dialCtx(t), cli, "127.0.0.1", 80, &Auth{User: "u", Password: "p"}); err != nil {
			t.Fatalf("Connect: %v", err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
	t.Run("GW-7/auth-status-echoing-version-5-accepted", func(t *testing.T) {
		cli, srv := net.Pipe()
		defer cli.Close()
		done := serve(t, srv, []script{{greetBoth, pickPass}, {sub, []byte{5, 0}}, {req, okReply4}})
		if err := Connect(dialCtx(t), cli, "127.0.0.1", 80, &Auth{User: "gwuser", Password: "pa:ss@"}); err != nil {
			t.Fatalf("Connect: %v", err)
		}
		<-done
	})
}

// gatewayFault asserts err is the gateway's failure (*Error) at step with
// cause target (nil: any).
func gatewayFault(t *testing.T, err error, step Step, target error) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v (%T), want *Error", err, err)
	}
	if e.Step != step {
		t.Errorf("step = %s, want %s (%v)", e.Step, step, err)
	}
	if target != nil && !errors.Is(err, target) {
		t.Errorf("err = %v, want it to wrap %v", err, target)
	}
	var re *ReplyError
	if errors.As(err, &re) {
		t.Errorf("a gateway fault must not be a *ReplyError: %v", err)
	}
}

func TestGatewayFaults(t *testing.T) {
	req := []byte{5, 1, 0, 1, 127, 0, 0, 1, 0, 80}
	auth := &Auth{User: "gwuser", Password: "wrong"}
	sub := append(append(append([]byte{1, 6}, "gwuser"...), 5), "wrong"...)
	cases := []struct {
		name   string
		auth   *Auth
		steps  []script
		step   Step
		target error
	}{
		{"GW-7/wrong-password-is-gateway-failure", auth, []script{{greetBoth, pickPass}, {sub, []byte{1, 1}}}, StepAuth, ErrAuthRefused},
		{"GW-7/no-acceptable-method", nil, []script{{greetNone, []byte{5, 0xff}}}, StepGreeting, ErrNoAcceptableMethod},
		{"GW-7/password-wanted-but-none-configured", nil, []script{{greetNone, pickPass}}, StepGreeting, nil},
		{"GW-7/http-gateway-answers-garbage", nil, []script{{greetNone, []byte("HTTP/1.1 400 Bad Request\r\n\r\n")}}, StepGreeting, ErrMalformed},
		{"GW-7/closed-after-greeting", nil, []script{{greetNone, nil}}, StepGreeting, io.EOF},
		{"GW-7/bad-reply-version", nil, []script{{greetNone, pickNone}, {req, []byte{4, 0x5a, 0, 0, 0, 0, 0, 0}}}, StepConnect, ErrMalformed},
		{"GW-7/bad-reply-atyp", nil, []script{{greetNone, pickNone}, {req, []byte{5, 0, 0, 9, 0, 0}}}, StepConnect, ErrMalformed},
		{"GW-7/truncated-reply", nil, []script{{greetNone, pickNone}, {req, []byte{5, 0, 0, 1, 127}}}, StepConnect, io.ErrUnexpectedEOF},
		{"GW-7/closed-after-connect", nil, []script{{greetNone, pickNone}, {req, nil}}, StepConnect, io.EOF},
		{"GW-7/auth-answer-garbage", auth, []script{{greetBoth, pickPass}, {sub, []byte{0x48, 0x54}}}, StepAuth, ErrMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cli, srv := net.Pipe()
			defer cli.Close()
			done := serve(t, srv, tc.steps)
			err := Connect(dialCtx(t), cli, "127.0.0.1", 80, tc.auth)
			gatewayFault(t, err, tc.step, tc.target)
			cli.Close()
			<-done
		})
	}
}

func TestReplyCodes(t *testing.T) {
	req := []byte{5, 1, 0, 3, 9, 'o', 'r', 'i', 'g', 'i', 'n', '.', 't', 'e', 0, 80}
	cases := []struct {
		code Reply
		host bool
	}{
		{GeneralFailure, true}, {NotAllowed, true}, {NetworkUnreachable, true}, {HostUnreachable, true},
		{ConnectionRefused, true}, {TTLExpired, true}, {CommandNotSupported, false},
		{AddressTypeNotSupported, true}, {0x42, true},
	}
	for _, tc := range cases {
		t.Run("GW-7/reply-"+tc.code.String(), func(t *testing.T) {
			cli, srv := net.Pipe()
			defer cli.Close()
			// A failure reply is recognised from its first four bytes.
			done := serve(t, srv, []script{{greetNone, pickNone}, {req, []byte{5, byte(tc.code), 0, 1}}})
			err := Connect(dialCtx(t), cli, "origin.te", 80, nil)
			var re *ReplyError
			if !errors.As(err, &re) || re.Code != tc.code {
				t.Fatalf("err = %v, want *ReplyError %s", err, tc.code)
			}
			if re.HostScoped() != tc.host {
				t.Errorf("HostScoped = %v, want %v", re.HostScoped(), tc.host)
			}
			<-done
		})
	}
}

func TestTunnelBytesUntouched(t *testing.T) {
	t.Run("GW-7/bytes-after-reply-are-the-tunnels", func(t *testing.T) {
		cli, srv := net.Pipe()
		defer cli.Close()
		// A domain-typed bound address, then the origin's first bytes in
		// the same write: Connect must read exactly the reply.
		reply := append(append([]byte{5, 0, 0, 3, 4}, "gate"...), 0, 1)
		done := serve(t, srv, []script{{greetNone, pickNone}, {[]byte{5, 1, 0, 1, 127, 0, 0, 1, 0, 80}, append(reply, "SSH-2.0-x\r\n"...)}})
		if err := Connect(dialCtx(t), cli, "127.0.0.1", 80, nil); err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(cli)
		if string(got) != "SSH-2.0-x\r\n" {
			t.Fatalf("tunnel read %q", got)
		}
		<-done
	})
}

func TestSilentGateway(t *testing.T) {
	t.Run("GW-7/silent-gateway-times-out-as-gateway-failure", func(t *testing.T) {
		cli, srv := net.Pipe()
		defer cli.Close()
		defer srv.Close()
		go io.Copy(io.Discard, srv) // accepts bytes, never answers
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := Connect(ctx, cli, "127.0.0.1", 80, nil)
		gatewayFault(t, err, StepGreeting, context.DeadlineExceeded)
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("took %v, want the context's deadline", d)
		}
	})
	t.Run("GW-7/cancel-interrupts-handshake", func(t *testing.T) {
		cli, srv := net.Pipe()
		defer cli.Close()
		defer srv.Close()
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			var b [3]byte
			io.ReadFull(srv, b[:]) // the greeting arrived: now cancel
			cancel()
		}()
		err := Connect(ctx, cli, "127.0.0.1", 80, nil)
		gatewayFault(t, err, StepGreeting, context.Canceled)
	})
}

func TestBadArguments(t *testing.T) {
	long := string(bytes.Repeat([]byte{'a'}, 256))
	for name, f := range map[string]func(net.Conn) error{
		"GW-7/name-over-255-bytes": func(c net.Conn) error { return Connect(context.Background(), c, long, 80, nil) },
		"GW-7/port-zero":           func(c net.Conn) error { return Connect(context.Background(), c, "h", 0, nil) },
		"GW-7/user-over-255-bytes": func(c net.Conn) error {
			return Connect(context.Background(), c, "h", 1, &Auth{User: long, Password: "p"})
		},
		"GW-7/zone-id": func(c net.Conn) error { return Connect(context.Background(), c, "fe80::1%eth0", 1, nil) },
	} {
		t.Run(name, func(t *testing.T) {
			cli, srv := net.Pipe()
			defer srv.Close()
			defer cli.Close()
			// Nothing may be written: the pipe has no reader, so a write
			// would block forever.
			gatewayFault(t, f(cli), StepGreeting, nil)
		})
	}
}

// byteConn is a net.Conn that reads from a fixed answer and discards writes.
type byteConn struct {
	net.Conn
	r *bytes.Reader
}

func (c *byteConn) Read(p []byte) (int, error)         { return c.r.Read(p) }
func (c *byteConn) Write(p []byte) (int, error)        { return len(p), nil }
func (c *byteConn) SetDeadline(time.Time) error        { return nil }
func (c *byteConn) SetReadDeadline(t time.Time) error  { return nil }
func (c *byteConn) SetWriteDeadline(t time.Time) error { return nil }

// FuzzReadReply: never panics; a success consumes exactly the reply's
// length and only from a version-5 reply with a known address type.
func FuzzReadReply(f *testing.F) {
	f.Add(okReply4)
	f.Add([]byte{5, 0, 0, 3, 3, 'a', 'b', 'c', 0, 1, 'x'})
	f.Add([]byte{5, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1})
	f.Add([]byte{5, 4, 0, 1})
	f.Add([]byte("HTTP/1.1 200 OK\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		code, err := ReadReply(r)
		if err != nil {
			return
		}
		used := len(b) - r.Len()
		if b[0] != 5 {
			t.Fatalf("accepted version %d", b[0])
		}
		if code != Succeeded {
			if used != 4 {
				t.Fatalf("failure reply consumed %d bytes", used)
			}
			return
		}
		want := map[byte]int{1: 10, 4: 22}[b[3]]
		if b[3] == 3 {
			want = 4 + 1 + int(b[4]) + 2
		}
		if want == 0 || used != want {
			t.Fatalf("atyp %d: consumed %d, want %d", b[3], used, want)
		}
	})
}

// FuzzConnect: whatever a gateway answers, Connect returns nil, a
// *ReplyError or an *Error — never panics, never another error type.
func FuzzConnect(f *testing.F) {
	f.Add([]byte{5, 0, 5, 0, 0, 1, 1, 2, 3, 4, 0, 80}, false)
	f.Add([]byte{5, 2, 1, 0, 5, 0, 0, 1, 1, 2, 3, 4, 0, 80}, true)
	f.Add([]byte{5, 2, 1, 1}, true)
	f.Add([]byte{5, 0, 5, 3, 0, 1}, false)
	f.Add([]byte{}, false)
	f.Fuzz(func(t *testing.T, answer []byte, withAuth bool) {
		var a *Auth
		if withAuth {
			a = &Auth{User: "u", Password: "p"}
		}
		err := Connect(context.Background(), &byteConn{r: bytes.NewReader(answer)}, "example.com", 443, a)
		var re *ReplyError
		var e *Error
		switch {
		case err == nil, errors.As(err, &re), errors.As(err, &e):
		default:
			t.Fatalf("unexpected error type %T: %v", err, err)
		}
	})
}
