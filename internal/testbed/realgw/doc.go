// Package realgw starts the Debian programs that tests use as real
// gateways on loopback: microsocks and dante-server (danted) as SOCKS5
// gateways, stunnel4 as the TLS front of an https:// gateway. Each runs in its own process group and temp dir and is killed by
// t.Cleanup. A missing program fails the test with the apt-get line that
// installs it (the tagged suites never skip). Unix only.
package realgw
