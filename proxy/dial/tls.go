package dial

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"

	"github.com/dual-proxy/dual-proxy/proxy/candidate"
)

// sessionCacheSize is the TLS session cache per https gateway: resumed
// handshakes make each new connection to the gateway one round trip
// cheaper (docs/BENCHMARKS.md, TLS inside TLS).
const sessionCacheSize = 64

// Prepare builds the TLS configuration of every https gateway among cands,
// loading its CAFile, so that a bad file is a startup error
// rather than a failure at the first request. Calling it is optional (a
// configuration is built on first use otherwise) and must happen before
// the Dialer is used concurrently. Errors name the file, never credentials.
func (d *Dialer) Prepare(cands []candidate.Candidate) error {
	for _, c := range cands {
		if c.Direct || c.Kind != candidate.KindHTTPS {
			continue
		}
		if _, err := d.tlsConfig(c); err != nil {
			return err
		}
	}
	return nil
}

// MaxCAFile is the largest gateway CA file LoadCAFile reads, in bytes
// (4 MiB; a whole system bundle is about 200 KiB), so that a device such
// as /dev/zero or a huge file given as ?ca= cannot exhaust memory.
const MaxCAFile = 4 << 20

// LoadCAFile reads a PEM file of CA certificates into a new pool. Errors name
// the file: unreadable, not a regular file (a device, a pipe, a directory),
// larger than MaxCAFile, or no certificate in it.
func LoadCAFile(name string) (*x509.CertPool, error) {
	pem, err := readCAFile(name)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("gateway CA file %s: no PEM certificate in it", name)
	}
	return pool, nil
}

// readCAFile reads name, a regular file of at most MaxCAFile bytes. It
// checks the kind before opening, so that opening a FIFO cannot block,
// and again on the open file, which may have been replaced meanwhile.
func readCAFile(name string) ([]byte, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return nil, fmt.Errorf("gateway CA file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("gateway CA file %s: not a regular file", name)
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("gateway CA file: %w", err)
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("gateway CA file %s: not a regular file", name)
	}
	if fi.Size() > MaxCAFile {
		return nil, fmt.Errorf("gateway CA file %s: larger than %d bytes", name, MaxCAFile)
	}
	pem, err := io.ReadAll(io.LimitReader(f, MaxCAFile+1))
	if err != nil {
		return nil, fmt.Errorf("gateway CA file: %w", err)
	}
	if len(pem) > MaxCAFile {
		return nil, fmt.Errorf("gateway CA file %s: larger than %d bytes", name, MaxCAFile)
	}
	return pem, nil
}

// tlsConfig returns the TLS client configuration for https gateway c,
// built once per candidate: GatewayTLS cloned (or empty: system roots),
// ServerName the gateway's host (an IP literal is verified against the
// certificate's IP SANs and sent without SNI, RFC 6066 §3), RootCAs from
// c.CAFile when set, TLS 1.2 at least, ALPN "http/1.1" (we speak HTTP/1.1
// to the gateway), and a session cache.
func (d *Dialer) tlsConfig(c candidate.Candidate) (*tls.Config, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if cfg := d.tls[c.Key()]; cfg != nil {
		return cfg, nil
	}
	host, _, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return nil, err
	}
	var cfg *tls.Config
	if d.GatewayTLS != nil {
		cfg = d.GatewayTLS.Clone()
	} else {
		cfg = &tls.Config{}
	}
	// Verified against the host without an IPv6 zone id, which
	// certificates never name (the zone only picks the link to dial).
	cfg.ServerName, _, _ = strings.Cut(host, "%")
	cfg.InsecureSkipVerify = false
	if cfg.MinVersion < tls.VersionTLS12 {
		cfg.MinVersion = tls.VersionTLS12
	}
	cfg.NextProtos = []string{"http/1.1"}
	if cfg.ClientSessionCache == nil {
		cfg.ClientSessionCache = tls.NewLRUClientSessionCache(sessionCacheSize)
	}
	if c.CAFile != "" {
		if cfg.RootCAs, err = LoadCAFile(c.CAFile); err != nil {
			return nil, err
		}
	}
	if d.tls == nil {
		d.tls = make(map[string]*tls.Config)
	}
	d.tls[c.Key()] = cfg
	return cfg, nil
}

// handshake runs TLS over conn to https gateway c within ctx. A failure —
// the certificate does not verify for the gateway's name, the gateway is
// no TLS server, it closed or stayed silent — is PhaseGatewayTLS,
// TierGateway. The client writes no application data before
// the handshake completed and verified, so no request byte reaches a
// gateway that fails here.
func (d *Dialer) handshake(ctx context.Context, c candidate.Candidate, conn net.Conn) (*tls.Conn, error) {
	fail := func(err error) error {
		return &candidate.PathError{Candidate: c, Phase: candidate.PhaseGatewayTLS, Tier: candidate.TierGateway, Err: err}
	}
	cfg, err := d.tlsConfig(c)
	if err != nil {
		return nil, fail(err)
	}
	tc := tls.Client(conn, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		var ve *tls.CertificateVerificationError
		if errors.As(err, &ve) {
			return nil, fail(fmt.Errorf("gateway certificate does not verify: %w", err))
		}
		return nil, fail(ctxErr(ctx, err))
	}
	return tc, nil
}
