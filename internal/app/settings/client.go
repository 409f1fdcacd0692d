package settings

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/dual-proxy/dual-proxy/proxy/route"
)

// Client reads and changes the settings of one running instance (the
// `dual-proxy settings` command). It talks to the listener directly,
// never through a proxy from the environment.
type Client struct {
	// Addr is the instance's listener, "127.0.0.1:7896".
	Addr string
	// Token is the instance's control token (Authorization: Bearer).
	Token string
	// Kind is sent in ClientHeader ("cli"); "" sends none.
	Kind string
	// HTTP carries the calls; nil: a client without proxy and a 10 s
	// timeout.
	HTTP *http.Client
}

// RemoteError is an answer other than 200: Status, the field errors of a
// 400, else the message the instance gave.
type RemoteError struct {
	Status  int
	Errors  []FieldError
	Message string
}

// Error is one line: the field errors joined by "; ", else the message.
func (e *RemoteError) Error() string {
	if len(e.Errors) > 0 {
		return Invalid(e.Errors).Error()
	}
	if e.Message != "" {
		return e.Message
	}
	return fmt.Sprintf("HTTP %d", e.Status)
}

var directClient = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}

// Get reads the document. Errors: the connection's, *RemoteError.
func (c *Client) Get(ctx context.Context) (Document, error) {
	return c.do(ctx, http.MethodGet, "", nil)
}

// Set changes the settings in changes (key → value: a JSON value, or text
// as ParseText reads it; nil resets the key to its default) on the
// current version; when another change came first (409) it reads the new
// version and tries once more. Errors: the connection's, *RemoteError.
func (c *Client) Set(ctx context.Context, changes map[string]any) (Document, error) {
	doc, err := c.Get(ctx)
	if err != nil {
		return doc, err
	}
	for try := 0; ; try++ {
		doc, err = c.do(ctx, http.MethodPut, doc.Version, changes)
		var re *RemoteError
		if try > 0 || !errors.As(err, &re) || re.Status != http.StatusConflict {
			return doc, err
		}
		if doc, err = c.Get(ctx); err != nil {
			return doc, err
		}
	}
}

// GatewayEdit is what AddGateway or RemoveGateway did to the gateway
// list, for the command to say.
type GatewayEdit struct {
	// Verb is "added", "replaced", "unchanged" (the gateway is there as
	// given) or "removed".
	Verb string
	// Index is the 0-based place of the item added, replaced, found
	// unchanged or (the first) removed.
	Index int
	// Old are the items replaced or removed as the document shows them
	// (passwords masked); New is the gateway given, masked the same way.
	Old []string
	New string
}

// AddGateway puts gateway in the list as the proxy reads it (SPEC GW-2:
// one host:port is one gateway, whatever the scheme or credentials): a
// host:port not listed is appended; one listed with another scheme, user,
// password or CA file is replaced in place (a later item of that same
// host:port, which the proxy drops, goes); one listed as given is left
// as it is ("unchanged", no change sent, or one sent that the instance
// found already in effect). Errors: the connection's, *RemoteError.
func (c *Client) AddGateway(ctx context.Context, gateway string) (Document, GatewayEdit, error) {
	var ed GatewayEdit
	doc, changed, err := c.editGateways(ctx, func(l []string) []string {
		ed = GatewayEdit{Verb: "added", Index: len(l), New: route.RedactURL(gateway)}
		first := -1
		out := l[:0:0]
		for i, g := range l {
			if !sameAddr(g, gateway) {
				out = append(out, g)
				continue
			}
			ed.Old = append(ed.Old, g)
			if first < 0 {
				first, ed.Index = i, len(out)
				ed.Verb = "replaced"
				if SameGateway(g, gateway) && !hasPassword(gateway) {
					// The same gateway as the proxy reads it, and no
					// password to compare: keep the stored text.
					out = append(out, g)
				} else {
					out = append(out, gateway)
				}
			}
		}
		if first < 0 {
			out = append(out, gateway)
		}
		return out
	})
	if err == nil && !changed && ed.Verb == "replaced" {
		ed.Verb = "unchanged"
	}
	return doc, ed, err
}

// hasPassword reports whether gateway parses with a password that is not
// the mask (one the client cannot compare with the stored one).
func hasPassword(gateway string) bool {
	cd, err := route.ParseGateway(gateway, Gateway)
	return err == nil && cd.Password != "" && !maskedPassword(gateway)
}

// sameAddr reports whether a and b are one gateway to the proxy, which
// keeps one candidate per normalised host:port (route.BuildCandidates):
// both parse (route.ParseGateway) to the same host:port. Text that does
// not parse matches only itself.
func sameAddr(a, b string) bool {
	if strings.TrimSpace(a) == strings.TrimSpace(b) {
		return true
	}
	ca, errA := route.ParseGateway(a, Gateway)
	cb, errB := route.ParseGateway(b, Gateway)
	return errA == nil && errB == nil && ca.Addr == cb.Addr
}

// SameGateway reports whether a and b name one gateway as the proxy reads
// them (route.ParseGateway) with the same scheme ("host:port" is http),
// user, host:port and CA file. Passwords are not compared, so a
// gateway matches its masked form ("http://u:***@h:1") as a document
// shows it. Text that does not parse matches only itself.
func SameGateway(a, b string) bool {
	if strings.TrimSpace(a) == strings.TrimSpace(b) {
		return true
	}
	ca, errA := route.ParseGateway(a, Gateway)
	cb, errB := route.ParseGateway(b, Gateway)
	return errA == nil && errB == nil && ca.Kind == cb.Kind && ca.Addr == cb.Addr &&
		ca.HasAuth == cb.HasAuth && ca.User == cb.User && ca.CAFile == cb.CAFile
}

// RemoveGateway removes every item of gateway's host:port, as the proxy
// reads them (sameAddr: "host:port", "http://host:port" and
// "http://u:***@host:port" are one gateway). A gateway not in the list is
// a *RemoteError with Status 0 and nothing is changed.
func (c *Client) RemoveGateway(ctx context.Context, gateway string) (Document, GatewayEdit, error) {
	ed := GatewayEdit{Verb: "removed", New: route.RedactURL(gateway)}
	doc, _, err := c.editGateways(ctx, func(l []string) []string {
		ed.Old, ed.Index = nil, -1
		out := l[:0:0]
		for i, g := range l {
			if sameAddr(g, gateway) {
				if ed.Index < 0 {
					ed.Index = i
				}
				ed.Old = append(ed.Old, g)
				continue
			}
			out = append(out, g)
		}
		return out
	})
	if err == nil && len(ed.Old) == 0 {
		return doc, ed, &RemoteError{Message: fmt.Sprintf("%s is not a gateway of this instance (its gateways: %s)", ed.New, orNone(doc.Settings[Gateway]))}
	}
	return doc, ed, err
}

// editGateways reads the list, changes it with edit and sends it on the
// version read (once more on a 409). changed reports whether the
// instance took it as a change (a new version); a list edit leaves as it
// was is not sent.
func (c *Client) editGateways(ctx context.Context, edit func([]string) []string) (doc Document, changed bool, err error) {
	for try := 0; ; try++ {
		doc, err := c.Get(ctx)
		if err != nil {
			return doc, false, err
		}
		var list []string
		if l, ok := doc.Settings[Gateway].([]any); ok {
			for _, g := range l {
				s, _ := g.(string)
				list = append(list, s)
			}
		}
		before := slices.Clone(list)
		list = edit(list)
		if slices.Equal(before, list) {
			return doc, false, nil
		}
		if list == nil {
			list = []string{}
		}
		out, err := c.do(ctx, http.MethodPut, doc.Version, map[string]any{Gateway: list})
		var re *RemoteError
		if try > 0 || !errors.As(err, &re) || re.Status != http.StatusConflict {
			return out, err == nil && out.Version != doc.Version, err
		}
	}
}

// orNone is a list value as text, "none" when empty.
func orNone(x any) string {
	l, _ := x.([]any)
	if len(l) == 0 {
		return "none"
	}
	parts := make([]string, len(l))
	for i, g := range l {
		parts[i] = fmt.Sprint(g)
	}
	return strings.Join(parts, ", ")
}

func (c *Client) do(ctx context.Context, method, version string, body map[string]any) (Document, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return Document{}, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+c.Addr+Path, rd)
	if err != nil {
		return Document{}, err
	}
	if method == http.MethodPut {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("If-Match", `"`+version+`"`)
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	if c.Kind != "" {
		req.Header.Set(ClientHeader, c.Kind)
	}
	hc := c.HTTP
	if hc == nil {
		hc = directClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Document{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return Document{}, err
	}
	if resp.StatusCode == http.StatusOK {
		var doc Document
		if err := json.Unmarshal(data, &doc); err != nil {
			return Document{}, fmt.Errorf("%s answered something that is not a settings document (is it a dual-proxy?)", c.Addr)
		}
		return doc, nil
	}
	var e struct {
		Errors  []FieldError `json:"errors"`
		Error   string       `json:"error"`
		Version string       `json:"version"`
	}
	if json.Unmarshal(data, &e) != nil && resp.StatusCode == http.StatusNotFound {
		e.Error = c.Addr + " has no settings endpoint (an older dual-proxy?)"
	}
	return Document{Version: e.Version}, &RemoteError{Status: resp.StatusCode, Errors: e.Errors, Message: e.Error}
}
