package relay

import (
	"net"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/dual-proxy/dual-proxy/internal/lib/netutil"
)

// copyTunnel copies src to dst until EOF (nil error) or an error, like
// io.Copy, but holds neither a splice pipe nor a buffer while src is silent
// (io.Copy between two *net.TCPConn keeps a pipe pair per
// direction while it waits, 6 fds per idle tunnel instead of 2), and moves
// a small message with read(2) and write(2) (for the small
// messages of a reused tunnel two splice(2) calls through a pipe cost more).
//
// In src's readiness callback (syscall.RawConn.Read) it reads into a pooled
// buffer; a read that finds nothing gives the buffer back and lets the
// runtime wait for readability. What it read goes to dst in a RawConn.Write
// callback (waiting for writability holds the buffer only while it has
// bytes), then the next read follows at once: a short read does not prove
// that no FIN or error is queued behind the data. A read that fills the
// buffer means bulk: the next transfers splice src into a pooled pipe and
// on to dst, as io.Copy does, until the first splice after a wait moves
// less than a buffer's worth. Buffer and pipe go back to their pools
// before every wait for readability, so an idle tunnel holds neither. The
// write to dst is not nested in src's callback: that would hold src's
// descriptor while waiting for dst (closing src waits for it) and grow the
// relay goroutines' 2 KiB stacks. Other connection types fall back to
// io.Copy; no pipe (out of descriptors) means reads only. The read
// deadline of src applies to the wait for bytes, the write deadline of dst
// to the send.
//
// The reads and writes of a small message are raw system calls
// (netutil.ReadFD and WriteFD: no entersyscall/exitsyscall, and the
// runtime's monitor thread stays asleep; the sockets are non-blocking, so
// a call never waits, and moves at most one 32 KiB buffer). Measured at
// the sizes of bench scenario 2's reused tunnel (TLS records of 63 B up
// and 89 B down, 32 tunnels), the proxy's CPU per round trip is ≈ 15 % lower with them than with
// unix.Read and unix.Write; splicing every message instead cost ≈ 10 %
// more, and skipping the read that finds nothing (TCP_INQ says whether a
// FIN is queued behind the data) saved ≈ 8 % but cannot see a reset
// queued behind the data: the edge-triggered netpoller would wait for an
// edge that never comes (TestCopyTunnelEndBehindData). docs/BENCHMARKS.md
// has the figures.
func copyTunnel(dst, src net.Conn) (int64, error) { return copyTunnelFor(nil, dst, src) }

// copyTunnelFor is copyTunnel for one direction of t (nil: none): a write
// that finds dst's send buffer full, and the first write after that wait,
// touch t, so bytes that move to a slow reader count as activity before
// the copy returns (the idle bound closes a tunnel with no byte
// in either direction, not one whose reader is slow; relay.go's drained
// covers the wait itself). The usual write, without a wait, pays nothing.
func copyTunnelFor(t *tunnel, dst, src net.Conn) (int64, error) {
	c := tunnelCopy{t: t}
	return c.copy(dst, src)
}

// copyBufSize is the read buffer of a tunnel direction, the size of Go's
// io.Copy buffer; a read that fills it switches to splice.
const copyBufSize = 32 << 10

// maxSplice bounds one splice(2) into the pipe, as Go's own splice does
// (its pipes are sized to it with F_SETPIPE_SZ).
const maxSplice = 1 << 20

// tunnelCopy is one tunnel direction's state between the callbacks of
// copyTunnel.
type tunnelCopy struct {
	buf      *[copyBufSize]byte // held from a read until the next read finds nothing
	pend     []byte             // bytes of buf dst has not taken
	p        *splicePipe        // held from a splice until the next splice finds nothing
	bulk     bool               // a read filled the buffer: splice until a wake finds less
	woken    bool               // the next transfer is the first after a wait
	noPipe   bool               // no pipe could be made: reads only
	eof      bool               // src sent FIN and nothing is queued
	err      error              // the socket (either end) reported an error
	written  int64
	spliced  int64        // bytes moved by splice (tests)
	dstWaits atomic.Int32 // times dst's send buffer was full (tests)
	waited   bool         // the last write to dst found its send buffer full
	t        *tunnel      // touched at a wait for dst and the write after it; nil: none
}

func (c *tunnelCopy) copy(dst, src net.Conn) (int64, error) {
	s, ok := src.(*net.TCPConn)
	d, ok2 := dst.(*net.TCPConn)
	if !ok || !ok2 {
		return ioCopy(c.t, dst, src)
	}
	rc, err := s.SyscallConn()
	if err != nil {
		return ioCopy(c.t, dst, src)
	}
	wc, err := d.SyscallConn()
	if err != nil {
		return ioCopy(c.t, dst, src)
	}
	readable, writable := c.readable, c.writable // one method value each per direction, not per wait
	defer c.release()
	for {
		if err := rc.Read(readable); err != nil {
			return c.written, err
		}
		if c.err != nil || c.eof {
			return c.written, c.err
		}
		if err := wc.Write(writable); err != nil {
			return c.written, err
		}
		if c.err != nil {
			return c.written, c.err
		}
	}
}

// readable is the syscall.RawConn.Read callback: true once it moved bytes
// of src into the buffer or the pipe, or found EOF or an error; false
// (nothing queued) makes the runtime wait for readability, holding neither.
func (c *tunnelCopy) readable(fd uintptr) bool {
	for {
		var n int
		var err error
		if c.bulk {
			if c.p == nil {
				if c.p = getPipe(); c.p == nil {
					c.noPipe, c.bulk = true, false
					continue
				}
			}
			var m int64
			m, err = unix.Splice(int(fd), nil, c.p.w, nil, maxSplice, unix.SPLICE_F_NONBLOCK)
			n = int(m)
		} else {
			if c.buf == nil {
				c.buf = bufPool.Get().(*[copyBufSize]byte)
			}
			n, err = rawRead(int(fd), c.buf[:])
		}
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			c.release() // woken without bytes, or src drained: wait holding nothing
			c.woken = true
			return false
		case err != nil:
			c.err = err
		case n == 0:
			c.eof = true
		case c.bulk:
			c.p.data = n
			c.spliced += int64(n)
			// Less than a buffer's worth queued when woken: small again,
			// the next bytes are read. (The last splice of a burst moves
			// what trickled in meanwhile; it decides nothing.)
			c.bulk = n >= copyBufSize || !c.woken
		default:
			c.pend = c.buf[:n]
			c.bulk = n == copyBufSize && !c.noPipe
		}
		c.woken = false
		return true
	}
}

// writable is the syscall.RawConn.Write callback: it writes the pending
// bytes (buffer or pipe) to dst. False (EAGAIN: dst's send buffer is full)
// makes the runtime wait for writability.
func (c *tunnelCopy) writable(fd uintptr) bool {
	for {
		var n int
		var err error
		switch {
		case len(c.pend) > 0:
			n, err = rawWrite(int(fd), c.pend)
		case c.p != nil && c.p.data > 0:
			var m int64
			m, err = unix.Splice(c.p.r, nil, int(fd), nil, c.p.data, unix.SPLICE_F_NONBLOCK)
			n = int(m)
		default:
			return true
		}
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			c.dstWaits.Add(1)
			c.waited = true
			if c.t != nil {
				c.t.touch() // bytes moved to dst before its buffer filled
			}
			return false
		case err != nil:
			c.err = err
			return true
		}
		if len(c.pend) > 0 {
			c.pend = c.pend[n:]
		} else {
			c.p.data -= n
		}
		c.written += int64(n)
		if c.waited && c.t != nil {
			c.waited = false
			c.t.touch() // bytes moved to a slow reader: not idle
		}
	}
}

// rawRead and rawWrite are netutil.ReadFD and WriteFD with their errno as
// an error (nil for none); EAGAIN and EINTR compare equal to unix's.
func rawRead(fd int, p []byte) (int, error) { return errnoResult(netutil.ReadFD(uintptr(fd), p)) }

func rawWrite(fd int, p []byte) (int, error) { return errnoResult(netutil.WriteFD(uintptr(fd), p)) }

func errnoResult(n int, errno unix.Errno) (int, error) {
	if errno != 0 {
		return 0, errno
	}
	return n, nil
}

// release gives the buffer and the pipe back to their pools (a pipe with
// bytes left in it, dst having failed mid-send, is closed).
func (c *tunnelCopy) release() {
	if c.buf != nil {
		bufPool.Put(c.buf)
		c.buf, c.pend = nil, nil
	}
	if c.p != nil {
		putPipe(c.p)
		c.p = nil
	}
}

// bufPool keeps the read buffers of tunnel directions between reads.
var bufPool = sync.Pool{New: func() any { return new([copyBufSize]byte) }}

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

// sendQueued is the number of bytes in c's send queue (SIOCOUTQ: not yet
// acknowledged by the peer), or -1 when it cannot be read.
func sendQueued(c net.Conn) int64 {
	sc := socketOf(c)
	if sc == nil {
		return -1
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return -1
	}
	q := int64(-1)
	rc.Control(func(fd uintptr) {
		if n, err := unix.IoctlGetInt(int(fd), unix.SIOCOUTQ); err == nil {
			q = int64(n)
		}
	})
	return q
}
