package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// proc is a child process started by the bench (dual-proxy or a real
// gateway). Its stderr is drained into a bounded tail; lines that start a
// goroutine in a SIGQUIT dump are counted.
type proc struct {
	cmd  *exec.Cmd
	addr string // listening "host:port"
	done chan struct{}

	goroutines atomic.Int64
	mu         sync.Mutex
	tail       []string
}

var goroutineHeader = regexp.MustCompile(`^goroutine \d+ .*\[`)

// start runs argv with env and drains its stdout and stderr. onLine, when
// set, sees every stderr line first.
func start(env []string, onLine func(string), argv ...string) (*proc, error) {
	p := &proc{cmd: exec.Command(argv[0], argv[1:]...), done: make(chan struct{})}
	p.cmd.Env = env
	p.cmd.SysProcAttr = ownGroup()
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	p.cmd.Stdout = nil
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if goroutineHeader.MatchString(line) {
				p.goroutines.Add(1)
				continue
			}
			if onLine != nil {
				onLine(line)
			}
			p.mu.Lock()
			if len(p.tail) < 40 {
				p.tail = append(p.tail, line)
			}
			p.mu.Unlock()
		}
		p.cmd.Wait()
	}()
	return p, nil
}

// stderrTail returns the first stderr lines (for error messages).
func (p *proc) stderrTail() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.tail, "\n")
}

// stop sends SIGTERM, waits up to 3 s, then SIGKILLs the process group.
func (p *proc) stop() {
	if p == nil {
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(3 * time.Second):
		killGroup(p.cmd.Process)
		<-p.done
	}
}

// quitDump sends SIGQUIT (the Go runtime prints every goroutine and exits,
// GOTRACEBACK=all) and returns the number of goroutines in the dump.
func (p *proc) quitDump() (int, error) {
	p.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		killGroup(p.cmd.Process)
		<-p.done
		return 0, errors.New("no exit after SIGQUIT")
	}
	return int(p.goroutines.Load()), nil
}

// status reads VmRSS (KiB) and Threads from /proc/PID/status.
func (p *proc) status() (rssKiB, threads int, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "VmRSS:":
			rssKiB, _ = strconv.Atoi(f[1])
		case "Threads:":
			threads, _ = strconv.Atoi(f[1])
		}
	}
	return rssKiB, threads, nil
}

// cpuTime returns the user+system CPU time of the processes so far, from
// utime and stime in /proc/PID/stat (clock ticks of 10 ms: USER_HZ 100).
func cpuTime(ps ...*proc) time.Duration {
	var ticks int64
	for _, p := range ps {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:])) // f[0] is field 3 (state)
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64) // field 14 utime
		s, _ := strconv.ParseInt(f[12], 10, 64) // field 15 stime
		ticks += u + s
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// childEnv is the environment of every child: no proxy variables, a
// private HOME, state, runtime and temporary directory under home, and
// GOTRACEBACK=all for the goroutine dump. The runtime directory holds the
// launcher registry: without it the bench's dual-proxy
// instances registered in the user's own (TMP/dual-proxy-UID), so
// `dual-proxy status` listed a running bench. Every peer gets the same
// environment, so no row pays for it more than another.
func childEnv(home string) []string {
	for _, d := range []string{"run", "tmp"} {
		os.MkdirAll(filepath.Join(home, d), 0o700) // a failure shows as the child's own error
	}
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_STATE_HOME=" + filepath.Join(home, "state"),
		"XDG_RUNTIME_DIR=" + filepath.Join(home, "run"), "TMPDIR=" + filepath.Join(home, "tmp"), "GOTRACEBACK=all"}
}

var listenAddr = regexp.MustCompile(`msg=listening addr=(\S+)`)

// startDualProxy runs the dual-proxy binary with --listen-port 0 and
// --health-url ” plus args, and waits (≤ 5 s) for its "listening" log line.
func (w *world) startDualProxy(name string, args ...string) (*proc, error) {
	return w.startDualProxyBin(w.dpBin, name, args...)
}

// startDualProxyBin is startDualProxy with another binary (-compare).
func (w *world) startDualProxyBin(bin, name string, args ...string) (*proc, error) {
	return w.startListening(name, append([]string{bin, "--listen-port", "0", "--health-url", "", "--log-level", "info"}, args...)...)
}

// startRelay runs the bench's own binary as a reference CONNECT relay
// (-relay-serve) in a separate process.
func (w *world) startRelay(name string, copyBuf bool) (*proc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return w.startListening(name, exe, "-relay-serve", fmt.Sprintf("-relay-copybuf=%v", copyBuf))
}

// startListening runs argv and waits (≤ 5 s) for its "listening addr="
// log line.
func (w *world) startListening(name string, argv ...string) (*proc, error) {
	found := make(chan string, 1)
	env := childEnv(w.tmp)
	if w.profDir != "" && argv[0] == w.dpBin {
		w.started++
		env = append(env, "DUAL_PROXY_CPUPROFILE="+filepath.Join(w.profDir, fmt.Sprintf("%s-%d.pprof", name, w.started)))
	}
	p, err := start(env, func(line string) {
		if m := listenAddr.FindStringSubmatch(line); m != nil {
			select {
			case found <- m[1]:
			default:
			}
		}
	}, argv...)
	if err != nil {
		return nil, err
	}
	select {
	case p.addr = <-found:
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("%s exited: %s", name, p.stderrTail())
	case <-time.After(5 * time.Second):
		p.stop()
		return nil, fmt.Errorf("%s: no listening line after 5 s: %s", name, p.stderrTail())
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// gatewaySpec is how to start one real gateway from Debian.
type gatewaySpec struct {
	name, bin string
	conf      func(dir string, port int) (argv []string, err error)
}

var realGateways = []gatewaySpec{
	{"squid", "squid", func(dir string, port int) ([]string, error) {
		os.Chmod(dir, 0o777) // squid drops to user proxy
		c := fmt.Sprintf(`http_port 127.0.0.1:%d
pid_filename %[2]s/squid.pid
access_log none
cache_log %[2]s/cache.log
cache_store_log none
cache deny all
coredump_dir %[2]s
visible_hostname bench-squid
forwarded_for delete
via off
dns_nameservers 127.0.0.1
hosts_file /etc/hosts
shutdown_lifetime 1 seconds
pinger_enable off
acl localhost_src src 127.0.0.1/32 ::1
http_access allow localhost_src
http_access deny all
`, port, dir)
		f := filepath.Join(dir, "squid.conf")
		return []string{"squid", "-N", "-f", f}, os.WriteFile(f, []byte(c), 0o644)
	}},
	{"tinyproxy", "tinyproxy", func(dir string, port int) ([]string, error) {
		c := fmt.Sprintf("Port %d\nListen 127.0.0.1\nTimeout 600\nMaxClients 200\nLogLevel Warning\nAllow 127.0.0.1\nDisableViaHeader Yes\n", port)
		f := filepath.Join(dir, "tinyproxy.conf")
		return []string{"tinyproxy", "-d", "-c", f}, os.WriteFile(f, []byte(c), 0o644)
	}},
	{"privoxy", "privoxy", func(dir string, port int) ([]string, error) {
		c := fmt.Sprintf(`listen-address 127.0.0.1:%d
confdir %[2]s
templdir /etc/privoxy/templates
logdir %[2]s
logfile privoxy.log
toggle 0
enable-remote-toggle 0
enable-edit-actions 0
keep-alive-timeout 60
socket-timeout 300
max-client-connections 256
`, port, dir)
		f := filepath.Join(dir, "privoxy.conf")
		return []string{"privoxy", "--no-daemon", f}, os.WriteFile(f, []byte(c), 0o644)
	}},
}

// startGateway starts one real gateway on a free loopback port and waits
// (≤ 10 s) until it forwards a request to the origin. It returns nil, nil
// when the program is not installed.
func (w *world) startGateway(g gatewaySpec) (*proc, error) {
	if _, err := exec.LookPath(g.bin); err != nil {
		return nil, nil
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(w.tmp, g.name)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, err
	}
	argv, err := g.conf(dir, port)
	if err != nil {
		return nil, err
	}
	p, err := start(childEnv(w.tmp), nil, argv...)
	if err != nil {
		return nil, err
	}
	p.addr = "127.0.0.1:" + strconv.Itoa(port)
	probe := path{proxy: p.addr, origin: w.origin.plainAddr()}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return nil, fmt.Errorf("%s exited: %s", g.name, p.stderrTail())
		default:
		}
		if _, err := once(probe); err == nil {
			return p, nil
		}
		time.Sleep(20 * time.Millisecond) // polling readiness with a deadline
	}
	p.stop()
	return nil, fmt.Errorf("%s not ready after 10 s: %s", g.name, p.stderrTail())
}

// version returns the first line of `bin flag` output, trimmed.
func version(bin string, flag string) string {
	out, err := exec.Command(bin, flag).CombinedOutput()
	if err != nil && len(out) == 0 {
		return ""
	}
	line, _, _ := bytes.Cut(out, []byte{'\n'})
	return strings.TrimSpace(string(line))
}
