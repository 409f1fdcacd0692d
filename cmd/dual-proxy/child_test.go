package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
)

// childRoles are this package's stand-in children beside testworld's built-in ones: what the
// pool tests' children do with the base URL and token the launcher gives them, in Go instead
// of a sh script with curl (PLAT-1: they run on Windows too).
var childRoles = map[string]testworld.ChildRole{
	"pool-calls": poolCallsChild,
	"pool-edit":  poolEditChild,
	"pool-open":  poolOpenChild,
}

// childDo sends one request straight to the launcher's listener (loopback is in NO_PROXY)
// and returns the status, the ETag and the body.
func childDo(method, url, auth, ifMatch, body string) (int, string, string, error) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return 0, "", "", err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	if ifMatch != "" {
		req.Header.Set("If-Match", ifMatch)
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return 0, "", "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("ETag"), string(b), err
}

// orUnset is the variable's value, "unset" when empty or unset.
func orUnset(name string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return "unset"
}

// poolCallsChild prints ANTHROPIC_BASE_URL, the status of a message call without the launch
// token, the body of one with it, then ANTHROPIC_API_KEY and MOCK_KEY (or "unset").
func poolCallsChild([]string) int {
	base := os.Getenv("ANTHROPIC_BASE_URL")
	const msg = `{"model":"unified","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`
	code, _, _, err := childDo("POST", base+"/v1/messages", "", "", msg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	_, _, body, err := childDo("POST", base+"/v1/messages", os.Getenv("ANTHROPIC_AUTH_TOKEN"), "", msg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("%s\n%d\n%s\n%s\n%s\n", base, code, body, orUnset("ANTHROPIC_API_KEY"), orUnset("MOCK_KEY"))
	return 0
}

// poolEditChild prints the status of a config read without the token, of a save of $EDIT
// (If-Match: the ETag a read with the token gave) and of a read of the new pool p2's models.
func poolEditChild([]string) int {
	root := strings.TrimSuffix(os.Getenv("ANTHROPIC_BASE_URL"), "/p1")
	tok := os.Getenv("ANTHROPIC_AUTH_TOKEN")
	noTok, _, _, err1 := childDo("GET", root+"/config", "", "", "")
	_, etag, _, err2 := childDo("GET", root+"/config", tok, "", "")
	saved, _, _, err3 := childDo("PUT", root+"/config", tok, etag, os.Getenv("EDIT"))
	models, _, _, err4 := childDo("GET", root+"/p2/v1/models", tok, "", "")
	for _, err := range []error{err1, err2, err3, err4} {
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	fmt.Printf("%d\n%d\n%d\n", noTok, saved, models)
	return 0
}

// poolOpenChild, for a launcher started without --pool: it prints the status of a message
// call to pool p1 on the launcher's listener (found from HTTP_PROXY) without a token, then
// ANTHROPIC_AUTH_TOKEN (or "unset": no pool mode, no token given to the child).
func poolOpenChild([]string) int {
	proxyURL := os.Getenv("HTTP_PROXY")
	if proxyURL == "" {
		fmt.Fprintln(os.Stderr, "no HTTP_PROXY")
		return 1
	}
	const msg = `{"model":"unified","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`
	code, _, _, err := childDo("POST", strings.TrimSuffix(proxyURL, "/")+"/pool/p1/v1/messages", "", "", msg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("%d\n%s\n", code, orUnset("ANTHROPIC_AUTH_TOKEN"))
	return 0
}
