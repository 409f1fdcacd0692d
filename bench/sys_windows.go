package main

import (
	"os"
	"syscall"
	"time"
)

// The benchmark drives Linux gateways (squid, tinyproxy, privoxy) and reads /proc; on Windows it
// only builds (so `go vet ./...` covers it) and its in-process micro-benchmarks run.

// ownGroup: Windows has no process groups to kill as a whole.
func ownGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

// killGroup kills the process itself.
func killGroup(p *os.Process) { _ = p.Kill() }

// kernelName names the OS for the document header.
func kernelName() string { return "Windows" }

// raiseNoFile: Windows has no descriptor limit to raise.
func raiseNoFile(want uint64) uint64 { return want }

// selfCPU is 0: the in-process benchmarks report no CPU metric on Windows.
func selfCPU() time.Duration { return 0 }
