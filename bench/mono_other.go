//go:build !linux

package main

import "time"

// monoNow is the wall clock in nanoseconds, shared by the processes of one
// machine (Linux uses CLOCK_MONOTONIC, mono_linux.go): scenario 7 subtracts
// the mock channel's stamp from the client's reading.
func monoNow() int64 { return time.Now().UnixNano() }
