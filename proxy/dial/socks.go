package dial

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"

	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/socks5"
)

// openSOCKS opens a tunnel to target through SOCKS5 gateway c (SPEC GW-7).
// For socks5:// a destination name is resolved here first (we resolve; a
// name that does not resolve is PhaseOriginConnect, TierHost, and the
// gateway is not dialled); socks5h:// sends the name. The returned
// connection is the gateway's TCP connection, positioned at the tunnel's
// first byte.
func (d *Dialer) openSOCKS(ctx context.Context, c candidate.Candidate, target string) (net.Conn, error) {
	host, p, err := net.SplitHostPort(target)
	if err != nil {
		return nil, &candidate.PathError{Candidate: c, Phase: candidate.PhaseOriginConnect, Tier: candidate.TierHost, Err: err}
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return nil, &candidate.PathError{Candidate: c, Phase: candidate.PhaseOriginConnect, Tier: candidate.TierHost, Err: fmt.Errorf("bad port %q", p)}
	}
	if _, perr := netip.ParseAddr(host); perr != nil && c.Kind == candidate.KindSOCKS5 {
		if host, err = d.resolve(ctx, host); err != nil {
			return nil, &candidate.PathError{Candidate: c, Phase: candidate.PhaseOriginConnect, Tier: candidate.TierHost, Err: err}
		}
	}
	conn, err := d.tcp(ctx, c.Addr)
	if err != nil {
		return nil, dialError(c, candidate.PhaseGatewayConnect, candidate.TierGateway, err)
	}
	var auth *socks5.Auth
	if c.HasAuth {
		auth = &socks5.Auth{User: c.User, Password: c.Password}
	}
	if err := socks5.Connect(ctx, conn, host, port, auth); err != nil {
		conn.Close()
		return nil, socksError(c, err)
	}
	return conn, nil
}

// socksError classifies a socks5.Connect error (SPEC CD-1): a failure
// reply is the destination's (TierHost) unless the gateway cannot CONNECT
// at all; method selection and credentials are PhaseSOCKSHandshake; a
// malformed, truncated or missing reply to CONNECT is PhaseConnectResponse;
// all of those are the gateway's (TierGateway).
func socksError(c candidate.Candidate, err error) *candidate.PathError {
	pe := &candidate.PathError{Candidate: c, Phase: candidate.PhaseConnectResponse, Tier: candidate.TierGateway, Err: err}
	var re *socks5.ReplyError
	var se *socks5.Error
	switch {
	case errors.As(err, &re):
		if re.HostScoped() {
			pe.Tier = candidate.TierHost
		}
	case errors.As(err, &se) && se.Step != socks5.StepConnect:
		pe.Phase = candidate.PhaseSOCKSHandshake
	}
	return pe
}

// resolve returns one address of name for a socks5:// CONNECT: the first
// the resolver returns (in its preference order), as a literal.
func (d *Dialer) resolve(ctx context.Context, name string) (string, error) {
	r := d.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupNetIP(ctx, "ip", name)
	if err != nil {
		return "", fmt.Errorf("resolve %s for socks5://: %w", name, err)
	}
	if len(addrs) == 0 {
		return "", fmt.Errorf("resolve %s for socks5://: no address", name)
	}
	return addrs[0].Unmap().String(), nil
}
