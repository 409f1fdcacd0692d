package testworld

import "golang.org/x/sys/windows"

// refusedErrno is what a dial to RefusedAddr fails with: winsock's code (Go's
// syscall.ECONNREFUSED is an invented value no Windows socket call returns).
var refusedErrno = windows.WSAECONNREFUSED
