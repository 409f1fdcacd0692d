package netutil

// RefusingPort is a TCP port on 127.0.0.1 that refuses every connection
// and that no other socket on the machine can take while it is held: a
// socket bound to it without SO_REUSEADDR and never listening (bind(2)
// without listen(2)). A port found with net.Listen(":0") and closed again
// is free for the next test's listener or an outgoing connection's local
// port, so a "dead gateway" made that way can come alive under load (the
// demo's failover once went through another process's listener); this one
// stays dead until Close.
type RefusingPort struct {
	// Port is the held port number (1..65535).
	Port  int
	close func() error
}

// ReserveRefusingPort binds a socket to a free port of 127.0.0.1 and holds
// it. Errors: the socket(2) or bind(2) failure (out of descriptors or
// ports). Close releases it.
func ReserveRefusingPort() (*RefusingPort, error) { return reserveRefusingPort() }

// Close releases the port; calling it again returns nil.
func (p *RefusingPort) Close() error {
	if p == nil || p.close == nil {
		return nil
	}
	c := p.close
	p.close = nil
	return c()
}
