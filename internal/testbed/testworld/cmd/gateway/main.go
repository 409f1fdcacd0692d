// Command gateway serves a testworld gateway (an HTTP/1.1 forward proxy
// that dials only loopback) on a fixed port and logs every request head as
// a JSON line, for the real-agent tests that run it inside a network
// namespace (internal/testbed/agentlab), where the test process cannot listen:
//
//	gateway -addr 127.0.0.1:18888 -log heads.jsonl -route mock.test:18080=127.0.0.1:18080
//
// A log line is {"kind": "HTTP" or "CONNECT", "method", "target" (the
// request-target as sent), "user_agent", "has_proxy_auth"}. A target that
// is no loopback IP literal, "localhost" or -route gets 403 and is never
// dialled. "gateway listening" on stderr says it is ready; SIGTERM or
// SIGINT stops it.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
)

// routes is the repeatable -route host:port=IP:port flag.
type routes []string

func (r *routes) String() string     { return strings.Join(*r, ",") }
func (r *routes) Set(v string) error { *r = append(*r, v); return nil }

func main() {
	addr := flag.String("addr", "127.0.0.1:18888", "listen address")
	logFile := flag.String("log", "", "JSON-lines log of the request heads")
	var rs routes
	flag.Var(&rs, "route", "host:port=IP:port: dial the loopback IP:port for that target (repeatable)")
	flag.Parse()

	opts := []testworld.GatewayOption{testworld.WithRefusedStatus(http.StatusForbidden)}
	for _, r := range rs {
		target, to, ok := strings.Cut(r, "=")
		if !ok {
			fmt.Fprintf(os.Stderr, "gateway: -route %q: want host:port=IP:port\n", r)
			os.Exit(2)
		}
		opts = append(opts, testworld.WithRoute(target, to))
	}
	if *logFile != "" {
		f, err := os.OpenFile(*logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		var mu sync.Mutex
		opts = append(opts, testworld.WithHeadLog(func(h testworld.GatewayHead) {
			kind := "HTTP"
			if h.Method == http.MethodConnect {
				kind = "CONNECT"
			}
			b, _ := json.Marshal(map[string]any{"kind": kind, "method": h.Method, "target": h.Target, "user_agent": h.UserAgent, "has_proxy_auth": h.ProxyAuthorization})
			mu.Lock()
			defer mu.Unlock()
			_, _ = f.Write(append(b, '\n'))
		}))
	}
	g, err := testworld.ListenGateway(*addr, opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "gateway listening on %s\n", g.Addr)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, os.Interrupt)
	<-stop
	g.Close()
}
