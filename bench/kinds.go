package main

import (
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// The https and SOCKS5 gateway kinds in scenario 2: the same tunnel
// through dual-proxy → microsocks (SOCKS5) and through dual-proxy →
// stunnel4 → squid (an https:// gateway: TLS to the gateway, the client's
// TLS inside it), next to dual-proxy → squid.

// kindGateways are the extra gateway processes and the dual-proxy
// instances that use them; nil fields are not installed.
type kindGateways struct {
	socks, dante, front       *proc // microsocks; danted; stunnel4 in front of squid
	dpSOCKS, dpDante, dpHTTPS *proc // dual-proxy with --upstream-url socks5h:// / https://
}

func (k *kindGateways) stop() {
	for _, p := range []*proc{k.dpSOCKS, k.dpDante, k.dpHTTPS, k.socks, k.dante, k.front} {
		if p != nil {
			p.stop()
		}
	}
}

// startKinds starts microsocks and, when squid runs, stunnel4 in front of
// it with a self-signed certificate for 127.0.0.1 (also the CA file given
// to dual-proxy as ?ca=), and a dual-proxy for each. Programs that are not
// installed are noted and left out.
func (w *world) startKinds() (*kindGateways, error) {
	k := &kindGateways{}
	if _, err := exec.LookPath("microsocks"); err != nil {
		w.note("microsocks is not installed: the SOCKS5 gateway rows are left out.")
	} else {
		p, err := w.startTCP("microsocks", func(port int) []string {
			return []string{"microsocks", "-i", "127.0.0.1", "-p", strconv.Itoa(port)}
		})
		if err != nil {
			return k, err
		}
		k.socks = p
		if k.dpSOCKS, err = w.startDualProxy("dp-socks", "--upstream-url", "socks5h://"+p.addr, "--loopback-direct=false"); err != nil {
			return k, err
		}
	}
	if _, err := exec.LookPath("danted"); err != nil {
		w.note("dante-server is not installed: its SOCKS5 gateway rows are left out.")
	} else {
		dir := filepath.Join(w.tmp, "danted")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return k, err
		}
		p, err := w.startTCP("danted", func(port int) []string {
			conf := fmt.Sprintf("logoutput: stderr\ninternal: 127.0.0.1 port = %d\nexternal: 127.0.0.1\nsocksmethod: none\nclientmethod: none\n"+
				"client pass {\n  from: 127.0.0.0/8 to: 0.0.0.0/0\n}\nsocks pass {\n  from: 127.0.0.0/8 to: 127.0.0.0/8\n}\n", port)
			f := filepath.Join(dir, "danted.conf")
			os.WriteFile(f, []byte(conf), 0o644)
			return []string{"danted", "-f", f, "-N", "1", "-p", filepath.Join(dir, "danted.pid")}
		})
		if err != nil {
			return k, err
		}
		k.dante = p
		if k.dpDante, err = w.startDualProxy("dp-dante", "--upstream-url", "socks5h://"+p.addr, "--loopback-direct=false"); err != nil {
			return k, err
		}
	}
	squid := w.gw["squid"]
	stunnel, err := exec.LookPath("stunnel4")
	switch {
	case err != nil:
		w.note("stunnel4 is not installed: the https:// gateway rows are left out.")
	case squid == nil:
		w.note("squid is not running: the https:// gateway rows (stunnel4 in front of squid) are left out.")
	default:
		dir := filepath.Join(w.tmp, "stunnel")
		cert, key, err := writeSelfSigned(dir)
		if err != nil {
			return k, err
		}
		p, err := w.startTCP("stunnel4", func(port int) []string {
			conf := fmt.Sprintf("foreground = yes\npid =\ndebug = 3\n[gw]\naccept = 127.0.0.1:%d\nconnect = %s\ncert = %s\nkey = %s\n",
				port, squid.addr, cert, key)
			f := filepath.Join(dir, "stunnel.conf")
			os.WriteFile(f, []byte(conf), 0o644)
			return []string{stunnel, f}
		})
		if err != nil {
			return k, err
		}
		k.front = p
		u := "https://" + p.addr + "/?ca=" + url.QueryEscape(cert)
		if k.dpHTTPS, err = w.startDualProxy("dp-https", "--upstream-url", u, "--loopback-direct=false"); err != nil {
			return k, err
		}
		w.note("https:// gateway rows: stunnel4 (TLS 1.3, self-signed ECDSA P-256 certificate given to dual-proxy as ?ca=) in front of the same squid; every new tunnel opens a new TLS connection to stunnel (resumed from dual-proxy's per-gateway session cache after the first), and the client's own TLS runs inside it.")
	}
	return k, nil
}

// startTCP runs argv(port) on a free loopback port and waits (≤ 10 s)
// until the port accepts TCP connections.
func (w *world) startTCP(name string, argv func(port int) []string) (*proc, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	p, err := start(childEnv(w.tmp), nil, argv(port)...)
	if err != nil {
		return nil, err
	}
	p.addr = "127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return nil, fmt.Errorf("%s exited: %s", name, p.stderrTail())
		default:
		}
		if c, err := net.DialTimeout("tcp", p.addr, time.Second); err == nil {
			c.Close()
			return p, nil
		}
		time.Sleep(20 * time.Millisecond) // polling readiness with a deadline
	}
	p.stop()
	return nil, fmt.Errorf("%s not ready after 10 s: %s", name, p.stderrTail())
}

// writeSelfSigned writes the bench's self-signed certificate (CA and leaf
// for 127.0.0.1) and its key as PEM files into dir.
func writeSelfSigned(dir string) (certFile, keyFile string, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", err
	}
	cert, _, err := selfSigned()
	if err != nil {
		return "", "", err
	}
	keyDER, err := x509.MarshalECPrivateKey(cert.PrivateKey.(*ecdsa.PrivateKey))
	if err != nil {
		return "", "", err
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o600); err != nil {
		return "", "", err
	}
	return certFile, keyFile, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
}

// rows are the comparison rows of k: a tunnel through each dual-proxy,
// with the CPU of the gateway processes behind it charged to the row.
func (k *kindGateways) rows(tlsPath func(string) path, squid *proc) []named {
	var out []named
	if k.dpSOCKS != nil {
		out = append(out, named{"dual-proxy → microsocks (socks5h)", tlsPath(k.dpSOCKS.addr), []*proc{k.dpSOCKS, k.socks}})
	}
	if k.dpDante != nil {
		out = append(out, named{"dual-proxy → danted (socks5h)", tlsPath(k.dpDante.addr), []*proc{k.dpDante, k.dante}})
	}
	if k.dpHTTPS != nil {
		out = append(out, named{"dual-proxy → stunnel → squid (https gateway, TLS in TLS)", tlsPath(k.dpHTTPS.addr), []*proc{k.dpHTTPS, k.front, squid}})
	}
	return out
}
