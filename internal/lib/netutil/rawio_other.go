//go:build !linux

package netutil

import "syscall"

// rawSyscalls: RawIO returns the connection itself (rawio.go).
const rawSyscalls = false

func sysRead(uintptr, []byte) (int, syscall.Errno)  { return 0, syscall.EINVAL }
func sysWrite(uintptr, []byte) (int, syscall.Errno) { return 0, syscall.EINVAL }
