//go:build unix

package realgw

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"testing"
	"time"
)

// Microsocks starts Debian's microsocks (SOCKS5, RFC 1928) on loopback;
// with a non-empty user it requires RFC 1929 user/pass (-u/-P).
func Microsocks(t testing.TB, user, pass string) *Proc {
	t.Helper()
	bin := Binary(t, "microsocks", "microsocks")
	return start(t, "microsocks", bin, func(dir string, port int) []string {
		args := []string{"-i", "127.0.0.1", "-p", strconv.Itoa(port)}
		if user != "" {
			args = append(args, "-u", user, "-P", pass)
		}
		return args
	}, socksReady)
}

// Dante starts Debian's dante-server (danted, SOCKS5) on loopback without
// authentication. The minimal config runs as whatever user starts it (no
// user.* lines, no privileged operations), in the foreground with one
// process (-N 1), logging to stderr; no systemd.
func Dante(t testing.TB) *Proc {
	t.Helper()
	bin := Binary(t, "danted", "dante-server")
	return start(t, "danted", bin, func(dir string, port int) []string {
		conf := fmt.Sprintf(`logoutput: stderr
internal: 127.0.0.1 port = %d
external: 127.0.0.1
socksmethod: none
clientmethod: none
client pass {
  from: 127.0.0.0/8 to: 0.0.0.0/0
}
socks pass {
  from: 127.0.0.0/8 to: 127.0.0.0/8
}
`, port)
		return []string{"-f", write(t, dir, "danted.conf", conf), "-N", "1", "-p", dir + "/danted.pid"}
	}, socksReady)
}

// Stunnel starts stunnel4 as a TLS server on loopback that forwards the
// decrypted stream to backend ("127.0.0.1:PORT"), with the given PEM
// certificate chain and key: the TLS front of an https:// gateway. Its log (debug 5, on stderr in the foreground: accepted
// connections, handshake errors, bytes per connection) is in LogFile.
func Stunnel(t testing.TB, backend, certFile, keyFile string) *Proc {
	t.Helper()
	bin := Binary(t, "stunnel4", "stunnel4")
	return start(t, "stunnel4", bin, func(dir string, port int) []string {
		conf := fmt.Sprintf(`foreground = yes
pid =
debug = 5
[gw]
accept = 127.0.0.1:%d
connect = %s
cert = %s
key = %s
`, port, backend, certFile, keyFile)
		return []string{write(t, dir, "stunnel.conf", conf)}
	}, func(addr string) bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

// socksReady reports whether a SOCKS5 gateway at addr answers a greeting.
func socksReady(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte{5, 2, 0, 2}); err != nil {
		return false
	}
	var ans [2]byte
	_, err = io.ReadFull(c, ans[:])
	return err == nil && ans[0] == 5
}
