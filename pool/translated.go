package pool

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/dual-proxy/dual-proxy/pool/api"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// memberRoute is how one attempt talks to its member: the
// API the member is sent (its flavour reads the answer: watcher,
// inspection, errors) and, when that differs from the client's, the
// translation.
// A same-API call is byte-transparent passthrough.
type memberRoute struct {
	fl        api.Flavour
	from, to  apikind.Kind
	translate bool
}

// translation is the call's request in the members' APIs (SPEC POOL-21): the
// client's request in neutral form (decoded once), the translated bodies, and
// the encrypted-reasoning bookkeeping.
type translation struct {
	nreq *neutral.Request
	nerr error
	// bodies caches translated bodies by target API, model and effort:
	// the eligibility check encodes each member's once, its attempts reuse it.
	bodies map[string][]byte
	// stripAll: members that rejected encrypted content in this call get
	// every reasoning item they did not produce removed (state.go).
	stripAll map[string]bool
	// owners are the producers of the request's encrypted reasoning items
	// (state.go), looked up on the first attempt that needs them.
	owners map[string]string
	// sigOwners are the minters of the request's reasoning signatures
	// (signatures.go), looked up like owners.
	sigOwners map[string]string
	// sigUnsigned: the request holds thinking blocks without a signature.
	sigUnsigned bool
}

// routeFor picks the API member ch is sent: its own when it speaks the
// client's; an `openai` channel (Chat and Responses) takes Chat for
// Anthropic and Gemini clients, the API most OpenAI-compatible servers share.
func (c *call) routeFor(ch *config.Channel) memberRoute {
	from := c.fl.API()
	to := api.MemberKind(ch.API, from)
	return memberRoute{fl: api.For(to), from: from, to: to, translate: from != to}
}

// neutral is the client's request in neutral form, decoded once per call.
func (c *call) neutral() (*neutral.Request, error) {
	if c.nreq == nil && c.nerr == nil {
		// ParseRequest accepted the body (valid JSON: its scan checks what
		// json.Valid does): it is decoded, not validated again.
		c.nreq, c.nerr = api.DecodeValidRequest(c.fl.API(), c.ci.Body(), c.ci.Model, c.ci.Stream)
	}
	return c.nreq, c.nerr
}

// translatedBody is the request for member ch in API rt.to: the neutral request
// with the member's target model and mapped effort, its output limit and, for
// an Anthropic member, the pool's cache breakpoints unless the channel turns
// them off (SPEC POOL-24), without the sampling hints the channel's API has
// no place for (api.FitChannel, SPEC POOL-25). A *neutral.FieldError means
// the request cannot be expressed for this member.
func (c *call) translatedBody(rt memberRoute, ch *config.Channel, effort string) ([]byte, error) {
	n, err := c.neutral()
	if err != nil {
		return nil, err
	}
	limit := outputLimit(n.MaxTokens, c.memberLimit(ch.ID))
	auto := ch.AutoCache() // read by the Anthropic encoder alone
	key := string(rt.to) + "\x00" + ch.API + "\x00" + c.target(ch.ID) + "\x00" + effort + "\x00" + strconv.Itoa(limit) + "\x00" + strconv.FormatBool(auto)
	if b, ok := c.bodies[key]; ok {
		return b, nil
	}
	r := *n
	r.Model = c.target(ch.ID)
	r.MaxTokens, r.CacheBreakpoints = limit, auto
	api.FitChannel(ch.API, &r)
	if effort != "" && effort != c.ci.Effort {
		if effort == "off" {
			effort = "none"
		}
		r.Reasoning = neutral.Reasoning{Effort: effort}
	}
	b, err := api.EncodeRequest(rt.to, &r)
	if err == nil {
		if c.bodies == nil {
			c.bodies = map[string][]byte{}
		}
		c.bodies[key] = b
	}
	return b, err
}

// memberEffort is the effort sent to member ch: the client's, mapped by
// the unified model's effort_map.
func (c *call) memberEffort(ch *config.Channel) string {
	if c.ci.Effort == "" {
		return ""
	}
	return config.MapEffort(c.um, ch.ID, c.ci.Effort)
}

// memberPath is the path appended to the member's base_url: the client's
// endpoint for passthrough, else the target API's endpoint (Gemini: the
// target model in the path). query is the client's query for passthrough
// (memberQuery: without the pool token), else what the target needs.
func (c *call) memberPath(rt memberRoute, ch *config.Channel) (path, query string) {
	return rt.fl.MemberPath(c.ep, c.target(ch.ID), c.ci.Stream, rt.translate, memberQuery(c.r.URL.RawQuery, c.p.opts.Token))
}

// memberQuery is the client's raw query rebuilt from the parameters the
// pool forwards, so the pool token never travels upstream (SPEC POOL-20):
// each parameter is decoded as tokenOK reads it (url.Values) and dropped
// when its name is Gemini's key credential, however percent-encoded
// ("k%65y"), or its value carries the token; a parameter that does not
// decode, or holds ';' (which url.ParseQuery refuses and some servers
// split on), is dropped too. The others keep their order, re-encoded.
func memberQuery(raw, token string) string {
	if raw == "" {
		return ""
	}
	var keep []string
	for _, kv := range strings.Split(raw, "&") {
		if kv == "" || strings.Contains(kv, ";") {
			continue
		}
		k, v, hasValue := strings.Cut(kv, "=")
		name, err1 := url.QueryUnescape(k)
		value, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil || strings.EqualFold(name, "key") || (token != "" && carriesToken(value, token)) {
			continue
		}
		if hasValue {
			keep = append(keep, url.QueryEscape(name)+"="+url.QueryEscape(value))
		} else {
			keep = append(keep, url.QueryEscape(name))
		}
	}
	return strings.Join(keep, "&")
}

// translateAnswer turns a member's complete 2xx answer into the client's
// API; an answer that cannot be expressed is the member's failure (class
// server), so another member may serve.
func (a *attempt) translateAnswer(body []byte) ([]byte, error) {
	r, err := api.DecodeResponse(a.rt.to, body)
	if err != nil {
		return nil, err
	}
	// The answer names the member's model, as a same-API answer passed
	// through does; the target id when it names none.
	return api.EncodeResponse(a.rt.from, r, a.c.target(a.m), a.c.customTools()...)
}

// customTools are the client's freeform tools (Codex's custom tools), whose
// calls a Responses client gets back as custom_tool_call items.
func (c *call) customTools() []string {
	if c.nreq == nil {
		return nil
	}
	return c.nreq.CustomTools()
}

// translateError renders a member's error document in the client's API.
func (a *attempt) translateError(status int, body []byte) (int, []byte) {
	return api.EncodeError(a.rt.from, neutral.DecodeError(status, body))
}

// countTokensEstimate answers a count_tokens call locally when the member
// does not speak the client's API (no other API has the endpoint): about
// four bytes of request per token.
func (c *call) countTokensEstimate() []byte {
	return c.fl.TokenCount(len(c.ci.Body()) / 4)
}

// untranslatable says why member m cannot be sent this request ("" when it
// can): the request has a field the member's API cannot express (a 400 naming
// the field when no member can take it).
func (c *call) untranslatable(m string) string {
	ch := c.cfg.Channel(m)
	if ch == nil {
		return ""
	}
	rt := c.routeFor(ch)
	if !rt.translate || c.ep.Kind != neutral.EpGenerate {
		return ""
	}
	if _, err := c.translatedBody(rt, ch, c.memberEffort(ch)); err != nil {
		return fmt.Sprintf("not expressible in the %s API (%v)", rt.to, err)
	}
	return ""
}

// out is what the client gets for one upstream event: the event's bytes for
// passthrough, else its translation (keepalive comments are dropped: the
// pool's own pings keep a translated stream alive). Always scrubbed of keys.
func (a *attempt) out(ev *wirefmt.SSEEvent) ([]byte, error) {
	if a.conv == nil {
		return a.answerEvents(a.c.scrub.ScrubBytes(ev.Raw)), nil
	}
	if ev.Comment {
		return nil, nil
	}
	b, err := a.conv.Feed(ev.Name, ev.Data)
	return a.answerEvents(a.c.scrub.ScrubBytes(b)), err
}

// answerEvents is b with the unified model id as the model its events
// name (answerModel), b itself when the ids are the same.
func (a *attempt) answerEvents(b []byte) []byte {
	if a.answerModel == nil {
		return b
	}
	return wirefmt.EventsModel(b, a.answerModel)
}

// clientFlavour is the API a request speaks, told by its path (every pool
// serves all four). GET /v1/models is Anthropic's list for clients that send
// anthropic-version and in pools of Anthropic members, else OpenAI's. routed is
// false for a path no API has; fl is then the Anthropic flavour (error shape).
func clientFlavour(r *http.Request, sub, poolAPI string) (fl api.Flavour, ep neutral.Endpoint, routed bool) {
	path := "/" + sub
	if path == "/v1/models" && r.Header.Get("Anthropic-Version") == "" && poolAPI != config.APIAnthropic {
		fl := api.For(apikind.Chat)
		ep, ok := fl.Endpoint(r.Method, path)
		return fl, ep, ok
	}
	for _, f := range []api.Flavour{api.For(apikind.Anthropic), api.For(apikind.Chat), api.For(apikind.Gemini)} {
		if ep, ok := f.Endpoint(r.Method, path); ok {
			if ep.API != "" {
				f = api.For(ep.API)
			}
			return f, ep, true
		}
	}
	if strings.HasPrefix(path, "/v1beta/") {
		return api.For(apikind.Gemini), neutral.Endpoint{}, false
	}
	if strings.HasPrefix(path, "/v1/chat/") || strings.HasPrefix(path, "/v1/responses") {
		return api.For(apikind.Chat), neutral.Endpoint{}, false
	}
	return api.For(apikind.Anthropic), neutral.Endpoint{}, false
}

// testFlavour is the API of a pool's test call (testBody): Chat
// Completions for pools of OpenAI members, else Anthropic Messages (the
// pool translates for other members).
func testFlavour(pc *config.PoolConfig) api.Flavour {
	if pc.API == config.APIOpenAI || pc.API == config.APIOpenAIChat {
		return api.For(apikind.Chat)
	}
	return api.For(apikind.Anthropic)
}
