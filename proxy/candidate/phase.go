package candidate

// Phase names the step of opening or using a path in which a failure
// happened. It appears in errors, logs, status and tests. The
// cooldown tier is set beside it, by the code that builds the PathError
// (see Tier).
type Phase string

// The phases, in the order a request meets them.
const (
	PhaseGatewayConnect  Phase = "gateway-connect"  // TCP to the gateway failed
	PhaseGatewayTLS      Phase = "gateway-tls"      // TLS to an https gateway failed or did not verify
	PhaseSOCKSHandshake  Phase = "socks-handshake"  // SOCKS5 method selection or RFC 1929 auth failed
	PhaseConnectResponse Phase = "connect-response" // the gateway's answer to CONNECT/HTTP
	PhaseTLSProbe        Phase = "tls-probe"        // TLS handshake probe over the path
	PhaseOriginConnect   Phase = "origin-connect"   // direct TCP to the origin failed, or its name did not resolve
	PhaseResponseHeader  Phase = "response-header"  // no/bad response header in time
	PhaseStream          Phase = "stream"           // after the response body started
)

// PhaseLocal is a failure of this machine, not of the path: out of file
// descriptors, socket buffers or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM)
// while opening or using a connection. Its Tier is TierNone: it never cools
// a candidate, clears a cache entry or fails a health check, and the
// request stops there (503) since every other candidate would fail alike.
const PhaseLocal Phase = "local"
