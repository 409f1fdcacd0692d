package cli

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/dual-proxy/dual-proxy/envrewrite"
)

// fetch is a minimal HTTP client for the demo on machines without curl. It
// sends the request through the proxy named by HTTPS_PROXY (https URLs) or
// HTTP_PROXY (http URLs) even for loopback URLs, which Go's own
// ProxyFromEnvironment never proxies, and ignores NO_PROXY. It prints the
// body to stdout; a non-2xx status exits 22 like `curl -f`.
func fetch(c *cli.Context, sio IO) error {
	if c.Args().Len() != 1 {
		return cli.Exit("dual-proxy fetch: want one URL", 2)
	}
	target, err := url.Parse(c.Args().First())
	if err != nil || (target.Scheme != "http" && target.Scheme != "https") {
		return cli.Exit("dual-proxy fetch: want an http:// or https:// URL", 2)
	}
	vars := []string{"HTTP_PROXY", "http_proxy"}
	if target.Scheme == "https" {
		vars = []string{"HTTPS_PROXY", "https_proxy"}
	}
	var proxyURL *url.URL
	for _, v := range vars {
		if val, ok := envrewrite.Get(sio.Environ, v); ok && val != "" {
			if proxyURL, err = url.Parse(val); err != nil {
				return cli.Exit("dual-proxy fetch: bad "+v, 2)
			}
			break
		}
	}
	tlsConf := &tls.Config{InsecureSkipVerify: c.Bool("insecure")}
	if file := c.String("cacert"); file != "" {
		pem, err := os.ReadFile(file)
		if err != nil {
			return cli.Exit("dual-proxy fetch: "+err.Error(), 2)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		tlsConf.RootCAs = pool
	}
	tr := &http.Transport{Proxy: http.ProxyURL(proxyURL), TLSClientConfig: tlsConf}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	resp, err := client.Get(target.String())
	if err != nil {
		return cli.Exit("dual-proxy fetch: "+err.Error(), 7)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(sio.Stdout, resp.Body); err != nil {
		return cli.Exit("dual-proxy fetch: "+err.Error(), 56)
	}
	if resp.StatusCode/100 != 2 {
		return cli.Exit(fmt.Sprintf("dual-proxy fetch: HTTP %d", resp.StatusCode), 22)
	}
	return nil
}
