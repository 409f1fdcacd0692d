// Package selfcert makes the throwaway self-signed certificate that the
// loopback origins of `dual-proxy demo` and the bench serve https:// with.
package selfcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"time"
)

// Cert is one self-signed certificate in the forms its users need.
type Cert struct {
	// TLS is the certificate and its ECDSA private key, Leaf parsed.
	TLS tls.Certificate
	// PEM is the certificate, PEM-encoded (a CA file for curl and ca= URLs).
	PEM []byte
	// Pool trusts exactly this certificate.
	Pool *x509.CertPool
}

// Loopback returns a new self-signed certificate (ECDSA P-256, random
// serial, valid from an hour ago for 25 hours) named commonName, for the
// DNS name localhost and the IP 127.0.0.1, usable both as the server's
// certificate and as its own trust anchor (IsCA, key usage CertSign).
// Errors come from key generation or certificate signing.
func Loopback(commonName string) (Cert, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Cert{}, err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return Cert{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:                  true,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return Cert{}, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return Cert{}, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return Cert{
		TLS:  tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf},
		PEM:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		Pool: pool,
	}, nil
}
