package testworld

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// childArg, as a test binary's first argument, makes it the stand-in child (see ChildMain).
const childArg = "-dual-proxy-test-child"

// ChildRole is one behaviour of the stand-in child: it gets the arguments after the role's name
// and returns the exit status.
type ChildRole func(args []string) int

// ChildMain makes the test binary the portable stand-in for the programs the launcher starts
// (the os/exec TestHelperProcess pattern; Windows has no sh, true or curl): when
// its first argument is the marker Child puts there, it runs the named role (one of
// childRoles, or one of extra) and exits; otherwise it returns at once. Call it first in
// TestMain. The role is chosen by argument, not environment, because the launcher passes its
// own environment on to the child.
//
// A launcher puts Claude Code's `--settings FILE` right after the command
// name; the stand-in takes it before the marker, and the role
// claude-settings prints that file.
func ChildMain(extra map[string]ChildRole) {
	args := os.Args[1:]
	if len(args) >= 2 && args[0] == "--settings" {
		childSettings, args = args[1], args[2:]
	}
	if len(args) < 2 || args[0] != childArg {
		return
	}
	role, ok := extra[args[1]]
	if !ok {
		role, ok = childRoles[args[1]]
	}
	if !ok {
		fmt.Fprintf(os.Stderr, "testworld child: no role %q\n", args[1])
		os.Exit(126)
	}
	os.Exit(role(args[2:]))
}

// childSettings is the file of a `--settings FILE` the stand-in child was
// given before its marker ("" for none).
var childSettings string

// Child returns the argv that runs this test binary as the stand-in child with role and args
// (the binary's TestMain must call ChildMain). The built-in roles:
//
//	exit N                 exit with status N
//	env NAME...            print each variable's value on a line of its own ("" when unset)
//	claude-settings        print the file of the --settings FILE given before the marker
//	touch FILE             create FILE, exit 0
//	wait-file FILE         exit 0 once FILE exists
//	pid-wait FILE          write the child's pid to FILE, then block until killed
//	fetch [-cacert F] URL  GET URL through the proxy the child's environment names
//	                       (HTTPS_PROXY or HTTP_PROXY by scheme, also for loopback), print the
//	                       body; exit 22 (curl -f's status) on an error or a non-2xx answer
func Child(t testing.TB, role string, args ...string) []string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{self, childArg, role}, args...)
}

// ChildAs is Child with the test binary copied to dir under name (see CopyExecutable), for a
// test that needs the child found by name on PATH or recognised by its name (an agent such as
// claude). argv[0] is the copy.
func ChildAs(t testing.TB, dir, name, role string, args ...string) []string {
	t.Helper()
	argv := Child(t, role, args...)
	p, err := CopyExecutable(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	argv[0] = p
	return argv
}

// CopyExecutable copies the running (test) binary to dir under name, plus ".exe" where the
// binary's own name has it, and returns the copy's path: a test binary started under another
// name can take that program's part (cmd/dual-proxy's TestMain runs main as "dual-proxy").
func CopyExecutable(dir, name string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	if strings.EqualFold(filepath.Ext(self), ".exe") {
		name += ".exe"
	}
	b, err := os.ReadFile(self)
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, name)
	return p, os.WriteFile(p, b, 0o755)
}

var childRoles = map[string]ChildRole{
	"claude-settings": func([]string) int {
		if childSettings == "" {
			fmt.Println("no --settings")
			return 0
		}
		b, err := os.ReadFile(childSettings)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testworld child:", err)
			return 1
		}
		fmt.Println(string(b))
		return 0
	},
	"exit": func(args []string) int {
		n, err := strconv.Atoi(strings.Join(args, ""))
		if err != nil {
			fmt.Fprintln(os.Stderr, "testworld child: exit N")
			return 126
		}
		return n
	},
	"env": func(args []string) int {
		for _, name := range args {
			fmt.Println(os.Getenv(name))
		}
		return 0
	},
	"touch": func(args []string) int {
		if len(args) != 1 || os.WriteFile(args[0], nil, 0o600) != nil {
			return 1
		}
		return 0
	},
	"wait-file": func(args []string) int {
		for len(args) == 1 {
			if _, err := os.Stat(args[0]); err == nil {
				return 0
			}
			time.Sleep(20 * time.Millisecond) // polling a file another process creates
		}
		return 126
	},
	"pid-wait": func(args []string) int {
		if len(args) != 1 || os.WriteFile(args[0], []byte(strconv.Itoa(os.Getpid())), 0o600) != nil {
			return 1
		}
		for {
			time.Sleep(time.Hour) // until killed (select{} alone would be a deadlock to the runtime)
		}
	},
	"fetch": childFetch,
}

// childFetch is the child's curl: fetch [-cacert FILE] URL.
func childFetch(args []string) int {
	fail := func(err error) int { fmt.Fprintln(os.Stderr, "testworld child: fetch:", err); return 22 }
	tlsConf := &tls.Config{}
	if len(args) == 3 && args[0] == "-cacert" {
		pem, err := os.ReadFile(args[1])
		if err != nil {
			return fail(err)
		}
		tlsConf.RootCAs = x509.NewCertPool()
		tlsConf.RootCAs.AppendCertsFromPEM(pem)
		args = args[2:]
	}
	if len(args) != 1 {
		return fail(fmt.Errorf("usage: fetch [-cacert FILE] URL"))
	}
	target, err := url.Parse(args[0])
	if err != nil {
		return fail(err)
	}
	name := strings.ToUpper(target.Scheme) + "_PROXY"
	proxy := os.Getenv(name)
	if proxy == "" {
		proxy = os.Getenv(strings.ToLower(name))
	}
	proxyURL, err := url.Parse(proxy)
	if err != nil || proxy == "" {
		return fail(fmt.Errorf("no usable %s: %q", name, proxy))
	}
	tr := &http.Transport{Proxy: http.ProxyURL(proxyURL), TLSClientConfig: tlsConf}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 30 * time.Second}).Get(target.String())
	if err != nil {
		return fail(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fail(err)
	}
	if resp.StatusCode/100 != 2 {
		return fail(fmt.Errorf("%s", resp.Status))
	}
	os.Stdout.Write(body)
	return 0
}
