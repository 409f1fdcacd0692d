package proxy

import (
	"io"
	"net"
	"runtime"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// copyTunnel copies src to dst until EOF (nil error) or an error, like
// io.Copy, but holds no splice pipe while src is silent (issue 20: io.Copy
// between two *net.TCPConn keeps a pipe pair per direction while it waits,
// 6 fds per idle tunnel instead of 2). Its readiness callback
// (syscall.RawConn.Read) first peeks at src (recvfrom MSG_PEEK of one
// byte, no pipe): nothing queued makes the runtime wait for readability;
// once bytes are there (the peek saw them, or the runtime woke the wait)
// it splices them into a pipe taken from a pool, and on to dst in a
// RawConn.Write callback (waiting for writability holds the pipe only while
// it has bytes); the pipe goes back to the pool before the next wait. A
// short-lived tunnel pays what io.Copy pays, one syscall that finds nothing
// queued per wait (the peek instead of a splice). After a large read the
// next one splices at once, as io.Copy does for bulk. Other connection
// types, or no pipe (out of descriptors), fall back to io.Copy. The read
// deadline of src applies to the wait, the write deadline of dst to the
// send.
func copyTunnel(dst, src net.Conn) (int64, error) {
	s, ok := src.(*net.TCPConn)
	d, ok2 := dst.(*net.TCPConn)
	if !ok || !ok2 {
		return io.Copy(dst, src)
	}
	rc, err := s.SyscallConn()
	if err != nil {
		return io.Copy(dst, src)
	}
	wc, err := d.SyscallConn()
	if err != nil {
		return io.Copy(dst, src)
	}
	var sp splicer
	fill, drain := sp.fill, sp.drain // one method value each per direction, not per wait
	for {
		sp.ready = sp.moved >= eagerSplice
		if err := rc.Read(fill); err != nil {
			sp.release()
			return sp.written, err
		}
		switch {
		case sp.noPipe:
			n, err := io.Copy(dst, src)
			return sp.written + n, err
		case sp.err != nil:
			sp.release()
			return sp.written, sp.err
		case sp.eof:
			sp.release()
			return sp.written, nil
		}
		err := wc.Write(drain)
		if err == nil {
			err = sp.err
		}
		if err != nil {
			sp.release()
			return sp.written, err
		}
		if sp.moved < eagerSplice {
			sp.release() // the next read starts with a peek: no pipe while waiting
		}
	}
}

// maxSplice bounds one splice(2) into the pipe, as Go's own splice does
// (its pipes are sized to it with F_SETPIPE_SZ).
const maxSplice = 1 << 20

// eagerSplice: after a read of at least this many bytes more are likely
// queued (bulk), so the next read splices without peeking first.
const eagerSplice = 64 << 10

// splicer is one tunnel direction's state between the readiness callbacks
// of copyTunnel.
type splicer struct {
	p       *splicePipe // held while bytes are in it, or between eager reads
	written int64
	moved   int   // bytes of the last read
	ready   bool  // bytes are expected: splice without peeking
	eof     bool  // src sent FIN and nothing is queued
	noPipe  bool  // no pipe could be made: copy without splice
	err     error // the socket (either end) reported an error
	peek    [1]byte
}

// fill is the syscall.RawConn.Read callback: true once it spliced what
// src holds into the pipe, or found EOF or an error; false makes the
// runtime wait for readability, holding no pipe.
func (s *splicer) fill(fd uintptr) bool {
	s.eof, s.err, s.moved = false, nil, 0
	if !s.ready {
		// recvfrom(2) without a source address: unix.Recvfrom would
		// allocate one per wait.
		n, _, errno := unix.Syscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&s.peek[0])), 1, unix.MSG_PEEK|unix.MSG_DONTWAIT, 0, 0)
		switch {
		case errno == unix.EINTR:
			return s.fill(fd)
		case errno == unix.EAGAIN:
			s.ready = true // the runtime calls again when src is readable
			return false
		case errno != 0:
			s.err = errno
			return true
		case n == 0:
			s.eof = true
			return true
		}
	}
	if s.p == nil {
		if s.p = getPipe(); s.p == nil {
			s.noPipe = true
			return true
		}
	}
	for {
		n, err := unix.Splice(int(fd), nil, s.p.w, nil, maxSplice, unix.SPLICE_F_NONBLOCK)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			s.release() // woken without bytes: wait again, without the pipe
			return false
		case err != nil:
			s.err = err
		case n == 0:
			s.eof = true
		default:
			s.p.data, s.moved = int(n), int(n)
		}
		return true
	}
}

// drain is the syscall.RawConn.Write callback: it splices the pipe's bytes
// into dst. False (EAGAIN: dst's send buffer is full) makes the runtime
// wait for writability.
func (s *splicer) drain(fd uintptr) bool {
	for s.p.data > 0 {
		n, err := unix.Splice(s.p.r, nil, int(fd), nil, s.p.data, unix.SPLICE_F_NONBLOCK)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return false
		case err != nil:
			s.err = err
			return true
		}
		s.p.data -= int(n)
		s.written += n
	}
	return true
}

// release gives the pipe back to the pool, or closes it when bytes are
// left in it (dst failed mid-send).
func (s *splicer) release() {
	if s.p != nil {
		putPipe(s.p)
		s.p = nil
	}
}

// splicePipe is a pipe pair used between two splice(2) calls; data is the
// number of bytes in it.
type splicePipe struct {
	r, w    int
	data    int
	cleanup runtime.Cleanup
}

// pipePool keeps pipes between waits and tunnels; a pipe the pool drops
// (GC) is closed by its cleanup, as Go's own splice pipe pool does.
var pipePool = sync.Pool{New: func() any {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return nil
	}
	unix.FcntlInt(uintptr(fds[0]), unix.F_SETPIPE_SZ, maxSplice) // best effort: 64 KiB otherwise
	p := &splicePipe{r: fds[0], w: fds[1]}
	p.cleanup = runtime.AddCleanup(p, closePipe, fds)
	return p
}}

// getPipe returns an empty pipe, or nil when none can be made.
func getPipe() *splicePipe {
	p, _ := pipePool.Get().(*splicePipe)
	return p
}

// putPipe returns an empty pipe to the pool and closes one with bytes in it.
func putPipe(p *splicePipe) {
	if p.data != 0 {
		p.cleanup.Stop()
		closePipe([2]int{p.r, p.w})
		return
	}
	pipePool.Put(p)
}

func closePipe(fds [2]int) {
	unix.Close(fds[0])
	unix.Close(fds[1])
}
