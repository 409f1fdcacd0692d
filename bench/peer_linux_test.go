package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/proxy"
)

// peerEnv makes this test binary the peer process of BenchmarkPlainProxyPeer.
const peerEnv = "DUAL_PROXY_BENCH_PEER"

func init() {
	if os.Getenv(peerEnv) == "1" {
		os.Exit(runPeer())
	}
}

// BenchmarkPlainProxyPeer is scenario 1's c=1 row in miniature: plain
// requests one at a time through an in-process dual-proxy whose client and
// origin run in another process (this binary, re-run as the peer), so that
// this process waits at each hop and goes idle in between as the proxy
// does in the bench (the in-process benchmarks never idle, so
// they cannot show what waking costs). cpu-ns/op and switches/op are this
// process's, all threads (the runtime's sysmon included), per request.
func BenchmarkPlainProxyPeer(b *testing.B) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), peerEnv+"=1")
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	outp, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { in.Close(); cmd.Wait() })
	out := bufio.NewScanner(outp)
	if !out.Scan() {
		b.Fatal("peer: no origin address")
	}
	origin := out.Text()
	srv, err := proxy.New(proxy.Config{LoopbackDirect: true})
	if err != nil {
		b.Fatal(err)
	}
	addr := testkit.Serve(b, srv)
	run := func(n int) {
		fmt.Fprintf(in, "%s %s %d\n", addr, origin, n)
		if !out.Scan() || out.Text() != "ok" {
			b.Fatalf("peer: %q", out.Text())
		}
	}
	run(500) // warm-up: connections, buffers, stacks
	b.ResetTimer()
	cpu, sw := selfCPU(), selfSwitches()
	run(b.N)
	b.StopTimer()
	b.ReportMetric(float64((selfCPU()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(selfSwitches()-sw)/float64(b.N), "switches/op")
}

// selfSwitches is the context switches of this process's threads so far.
func selfSwitches() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Nvcsw + ru.Nivcsw
}

// runPeer is the peer process: an origin (its address the first line on
// stdout), then for each "PROXY ORIGIN N" line on stdin N keep-alive
// requests one at a time through PROXY, answered "ok" (or the error).
func runPeer() int {
	o, err := newOrigin()
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer o.close()
	fmt.Println(o.plainAddr())
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		f := strings.Fields(in.Text())
		n, _ := strconv.Atoi(f[2])
		p := path{proxy: f[0], origin: f[1]}
		if err := peerRequests(p, n); err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println("ok")
	}
	return 0
}

func peerRequests(p path, n int) error {
	c, br, err := p.dial(time.Now().Add(opTimeout))
	if err != nil {
		return err
	}
	defer c.Close()
	req := p.reqLine("/", false)
	for i := 0; i < n; i++ {
		c.SetDeadline(time.Now().Add(opTimeout))
		if _, err := c.Write(req); err != nil {
			return err
		}
		if status, _, err := readResponse(br); err != nil || status != 200 {
			return fmt.Errorf("request %d: status %d, %v", i, status, err)
		}
	}
	return nil
}
