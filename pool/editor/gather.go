package editor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/dual-proxy/dual-proxy/pool/config"
)

// GatherTimeout bounds one member's model-list call.
const GatherTimeout = 20 * time.Second

// MemberModels is what one member answered to its model-list call.
type MemberModels struct {
	Member string `json:"member"`
	OK     bool   `json:"ok"`
	// Models are the ids with the capabilities the list (or the channel's
	// declared models, which win) told.
	Models []config.ModelInfo `json:"models"`
	// Error is why the list could not be had (scrubbed of keys); Path the
	// YAML field it belongs to (base_url for a failed call).
	Error string `json:"error,omitempty"`
	Path  string `json:"path,omitempty"`
}

// Proposal is one proposed unified model (SPEC POOL-12): its id, the target
// id per member that offers it, the merged capabilities and, in words,
// every way the members disagree.
type Proposal struct {
	ID      string                         `json:"id"`
	Targets map[string]string              `json:"targets"`
	Merged  config.Capabilities            `json:"merged"`
	Members map[string]config.Capabilities `json:"members"`
	// Missing are the members that do not offer it.
	Missing   []string `json:"missing,omitempty"`
	Conflicts []string `json:"conflicts,omitempty"`
}

// serveModels is POST /pool/config/models?members=a,b: each member's model
// list, fetched through the Transport with the member's key from the
// edited document (body; empty → the file on disk), and the proposals.
func (e *Editor) serveModels(w http.ResponseWriter, r *http.Request) {
	l, err := e.load()
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	merged := l.doc
	body, berr := readBody(w, r)
	if berr != nil {
		berr.answer(w)
		return
	}
	if len(bytes.TrimSpace(body)) > 0 {
		if m, _, errs := e.editedBody(body, l); m != nil {
			merged = m // the channels may be valid where the rest is not yet
		} else if len(errs) > 0 {
			writeJSON(w, http.StatusBadRequest, map[string]any{"errors": errs})
			return
		}
	}
	var members []string
	for _, m := range strings.Split(r.URL.Query().Get("members"), ",") {
		if m = strings.TrimSpace(m); m != "" {
			members = append(members, m)
		}
	}
	if len(members) == 0 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "query parameter members=a,b is required"})
		return
	}
	chans := mapValue(merged.Content[0], "channels")
	res := make([]MemberModels, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		wg.Go(func() { res[i] = e.gatherOne(r.Context(), m, mapValue(chans, m)) })
	}
	wg.Wait()
	writeJSON(w, http.StatusOK, map[string]any{"members": res, "models": propose(res)})
}

// gatherOne decodes channel id (node) alone and asks it for its models.
func (e *Editor) gatherOne(ctx context.Context, id string, node *yaml.Node) MemberModels {
	out := MemberModels{Member: id, Models: []config.ModelInfo{}}
	if node == nil {
		out.Error, out.Path = "no such channel", "channels."+id
		return out
	}
	cfg, err := config.ParseConfig(docOf(mapOf("channels", mapOf(id, node))), e.opts.Getenv)
	if err != nil {
		fe := fieldError(err)
		out.Error, out.Path = fe.Message, fe.Path
		return out
	}
	ch := cfg.Channels[0]
	scrub := config.NewScrubber(cfg)
	models, err := e.fetchModels(ctx, ch)
	if err != nil {
		out.Error, out.Path = scrub.Scrub(err.Error()), "channels."+id+".base_url"
		return out
	}
	for i := range models {
		if spec := ch.Model(models[i].ID); spec != nil { // declared capabilities win
			models[i].Capabilities = specCaps(spec)
		}
	}
	out.OK, out.Models = true, models
	return out
}

// fetchModels is FetchModels through the editor's Transport.
func (e *Editor) fetchModels(ctx context.Context, ch *config.Channel) ([]config.ModelInfo, error) {
	return FetchModels(ctx, e.opts.Transport, ch)
}

// FetchModels calls the channel's model list through tr: GET
// {base}/v1/models (Anthropic, OpenAI; Anthropic with anthropic-version)
// or {base}/v1beta/models (Gemini), with the channel's key, within
// GatherTimeout. The models come with the capability fields the server
// lists (parseModelList). Errors name the URL (a password in it masked)
// and the status or the reason. The editor's "gather" and the pool's
// /v1/models of a pool without models: use it (SPEC POOL-1).
func FetchModels(ctx context.Context, tr http.RoundTripper, ch *config.Channel) ([]config.ModelInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, GatherTimeout)
	defer cancel()
	u := memberURL(ch.BaseURL, "/v1/models")
	if ch.API == config.APIGemini {
		u = strings.TrimRight(ch.BaseURL, "/")
		if !strings.HasSuffix(u, "/v1beta") {
			u += "/v1beta"
		}
		u += "/models?pageSize=1000"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	if ch.API == config.APIAnthropic {
		req.Header.Set("Anthropic-Version", "2023-06-01")
	}
	ch.Authorize(req.Header)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %v", redactURLPassword(u), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, fmt.Errorf("GET %s: reading: %v", redactURLPassword(u), err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s %s", redactURLPassword(u), resp.Status, snippet(body))
	}
	models, err := parseModelList(body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %v", redactURLPassword(u), err)
	}
	return models, nil
}

// parseModelList reads an Anthropic/OpenAI list ({"data": [{"id"…}]}) or a
// Gemini one ({"models": [{"name": "models/…"}]}), with the capability
// fields servers put there: context_window, context_length (OpenRouter,
// vLLM's max_model_len), max_input_tokens, inputTokenLimit; max_tokens,
// max_output_tokens, outputTokenLimit, top_provider.max_completion_tokens;
// input, input_modalities, architecture.input_modalities; efforts.
func parseModelList(body []byte) ([]config.ModelInfo, error) {
	var doc struct {
		Data   []map[string]any `json:"data"`
		Models []map[string]any `json:"models"`
	}
	if err := json.Unmarshal(body, &doc); err != nil || (doc.Data == nil && doc.Models == nil) {
		return nil, fmt.Errorf("not a model list (want {\"data\": [...]} or {\"models\": [...]})")
	}
	var out []config.ModelInfo
	for _, m := range append(doc.Data, doc.Models...) {
		id, _ := m["id"].(string)
		if id == "" {
			name, _ := m["name"].(string)
			id = strings.TrimPrefix(name, "models/")
		}
		if id == "" {
			continue
		}
		mi := config.ModelInfo{ID: id}
		mi.ContextWindow = firstInt(m, "context_window", "context_length", "max_model_len", "max_input_tokens", "inputTokenLimit")
		mi.MaxTokens = firstInt(m, "max_tokens", "max_output_tokens", "outputTokenLimit")
		if tp, ok := m["top_provider"].(map[string]any); ok && mi.MaxTokens == 0 {
			mi.MaxTokens = firstInt(tp, "max_completion_tokens")
		}
		mi.Input = strings1(m["input"], m["input_modalities"])
		if a, ok := m["architecture"].(map[string]any); ok && mi.Input == nil {
			mi.Input = strings1(a["input_modalities"])
		}
		mi.Efforts = strings1(m["efforts"])
		out = append(out, mi)
	}
	return out, nil
}

func firstInt(m map[string]any, keys ...string) int {
	for _, k := range keys {
		if f, ok := m[k].(float64); ok && f > 0 {
			return int(f)
		}
	}
	return 0
}

func strings1(vs ...any) []string {
	for _, v := range vs {
		if list, ok := v.([]any); ok {
			var out []string
			for _, x := range list {
				if s, ok := x.(string); ok {
					out = append(out, s)
				}
			}
			return out
		}
	}
	return nil
}

func specCaps(s *config.ModelSpec) config.Capabilities {
	return config.Capabilities{ContextWindow: s.ContextWindow, MaxTokens: s.MaxTokens, Input: s.Input, Efforts: s.Efforts}
}

// datedSuffix matches a release date at the end of a model id
// ("-20250514", "-2024-08-06").
var datedSuffix = regexp.MustCompile(`-(\d{8}|\d{4}-\d{2}-\d{2})$`)

// family is the key members' ids are grouped by: lower case, without a
// vendor prefix ("deepseek/…", "models/…") and without a dated suffix.
func family(id string) string {
	id = strings.ToLower(id)
	if i := strings.LastIndexByte(id, '/'); i >= 0 {
		id = id[i+1:]
	}
	return datedSuffix.ReplaceAllString(id, "")
}

// propose groups the members' models by family into unified models: the id is
// the one most members use (the shorter on a tie), the targets each member's
// own id, the capabilities merged as the pool would (smallest context and
// output limit, union of inputs, common efforts).
func propose(res []MemberModels) []Proposal {
	groups := map[string]map[string]config.ModelInfo{} // family → member → model
	var order []string
	for _, mm := range res {
		for _, m := range mm.Models {
			f := family(m.ID)
			if groups[f] == nil {
				groups[f] = map[string]config.ModelInfo{}
				order = append(order, f)
			}
			if _, dup := groups[f][mm.Member]; !dup {
				groups[f][mm.Member] = m
			}
		}
	}
	out := make([]Proposal, 0, len(order))
	for _, f := range order {
		out = append(out, proposal(res, groups[f]))
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i].Missing) < len(out[j].Missing) })
	return out
}

func proposal(res []MemberModels, byMember map[string]config.ModelInfo) Proposal {
	p := Proposal{Targets: map[string]string{}, Members: map[string]config.Capabilities{}}
	count := map[string]int{}
	cfg := &config.Config{}
	pc := &config.PoolConfig{}
	for _, mm := range res {
		m, ok := byMember[mm.Member]
		if !ok {
			p.Missing = append(p.Missing, mm.Member)
			continue
		}
		count[m.ID]++
		p.Targets[mm.Member] = m.ID
		p.Members[mm.Member] = m.Capabilities
		pc.Members = append(pc.Members, mm.Member)
		cfg.Channels = append(cfg.Channels, &config.Channel{ID: mm.Member, Models: []config.ModelSpec{{ID: m.ID,
			ContextWindow: m.ContextWindow, MaxTokens: m.MaxTokens, Input: m.Input, Efforts: m.Efforts}}})
	}
	for id, n := range count {
		if p.ID == "" || n > count[p.ID] || (n == count[p.ID] && (len(id) < len(p.ID) || (len(id) == len(p.ID) && id < p.ID))) {
			p.ID = id
		}
	}
	p.Merged = config.MergeCaps(cfg, pc, &config.UnifiedModel{ID: p.ID, Targets: p.Targets})
	p.Conflicts = conflicts(pc.Members, p.Members, p.Merged)
	return p
}

// conflicts says, per capability, where the members differ and what the
// merge made of it; nothing is hidden by the merge.
func conflicts(members []string, caps map[string]config.Capabilities, merged config.Capabilities) []string {
	var out []string
	differ := func(name string, val func(config.Capabilities) string, result string) {
		var parts []string
		seen := map[string]bool{}
		for _, m := range members {
			v := val(caps[m])
			if v == "" {
				v = "unknown"
			}
			seen[v] = true
			parts = append(parts, m+" "+v)
		}
		if len(seen) > 1 {
			out = append(out, fmt.Sprintf("%s: %s → %s", name, strings.Join(parts, ", "), result))
		}
	}
	num := func(n int) string {
		if n == 0 {
			return ""
		}
		return fmt.Sprint(n)
	}
	list := func(l []string) string { return strings.Join(l, "|") }
	orNone := func(s string) string {
		if s == "" {
			return "none declared"
		}
		return s
	}
	differ("context_window", func(c config.Capabilities) string { return num(c.ContextWindow) }, orNone(num(merged.ContextWindow))+" (smallest)")
	differ("max_tokens", func(c config.Capabilities) string { return num(c.MaxTokens) }, orNone(num(merged.MaxTokens))+" (smallest)")
	differ("input", func(c config.Capabilities) string { return list(c.Input) }, orNone(list(merged.Input))+" (union; image calls go to members that take images)")
	differ("efforts", func(c config.Capabilities) string { return list(c.Efforts) }, orNone(list(merged.Efforts))+" (common to all)")
	return out
}

// memberURL joins base_url and an endpoint path the way the pool does
// (pool's memberURL): a base ending in a version segment ("/v1", "/v4")
// replaces the path's "/v1".
func memberURL(base, path string) string {
	base = strings.TrimRight(base, "/")
	if i := strings.LastIndexByte(base, '/'); i >= 0 {
		if seg := base[i+1:]; len(seg) >= 2 && seg[0] == 'v' && strings.Trim(seg[1:], "0123456789") == "" {
			return base + strings.TrimPrefix(path, "/v1")
		}
	}
	return base + path
}

func snippet(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
