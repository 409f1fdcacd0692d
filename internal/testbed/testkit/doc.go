// Package testkit holds the test helpers that the tests of several packages
// share: a manual clock (Clock), polling with a deadline (WaitFor), a
// server served on a loopback port for the length of a test (Serve), and a
// benchmark's CPU per iteration (ReportCPU, ProcessCPU).
//
// It is a normal (non-test) package so that any package's tests can import
// it, including the internal tests of proxy and pool. It imports only the
// standard library: test code here that needed a production package would create
// an import cycle for that package's own tests. Code outside tests never
// imports it.
package testkit
