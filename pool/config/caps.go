package config

import (
	"fmt"
	"slices"
)

// Capabilities are the limits of a unified model. Zero/empty
// fields are unknown (no member declared them and no override was given).
type Capabilities struct {
	ContextWindow int      `json:"context_window,omitempty"` // tokens
	MaxTokens     int      `json:"max_tokens,omitempty"`     // tokens
	Input         []string `json:"input,omitempty"`          // "text", "image", "pdf"
	Efforts       []string `json:"efforts,omitempty"`        // unified effort names
	DefaultEffort string   `json:"default_effort,omitempty"`
}

// MergeCaps merges a unified model's capabilities over the pool's members
// (SPEC POOL-12): context_window and max_tokens are the minimum over members
// that declare them, input the union (image if any member takes images),
// efforts the intersection over members that declare efforts (a member's
// efforts are seen through its effort_map). Explicit values on the unified
// model override.
func MergeCaps(cfg *Config, p *PoolConfig, m *UnifiedModel) Capabilities {
	var c Capabilities
	inputs := map[string]bool{}
	var efforts map[string]bool
	for _, mem := range p.Members {
		ch := cfg.Channel(mem)
		if ch == nil {
			continue
		}
		spec := ch.Model(p.Target(m, m.ID, mem))
		if spec == nil {
			continue
		}
		if spec.ContextWindow > 0 && (c.ContextWindow == 0 || spec.ContextWindow < c.ContextWindow) {
			c.ContextWindow = spec.ContextWindow
		}
		if spec.MaxTokens > 0 && (c.MaxTokens == 0 || spec.MaxTokens < c.MaxTokens) {
			c.MaxTokens = spec.MaxTokens
		}
		for _, in := range spec.Input {
			inputs[in] = true
		}
		if len(spec.Efforts) > 0 {
			served := map[string]bool{}
			for _, e := range effortScale {
				if contains(spec.Efforts, MapEffort(m, mem, e)) {
					served[e] = true
				}
			}
			if efforts == nil {
				efforts = served
			} else {
				for e := range efforts {
					if !served[e] {
						delete(efforts, e)
					}
				}
			}
		}
	}
	for _, in := range []string{"text", "image", "pdf"} {
		if inputs[in] {
			c.Input = append(c.Input, in)
		}
	}
	for _, e := range effortScale {
		if efforts[e] {
			c.Efforts = append(c.Efforts, e)
		}
	}
	if m.ContextWindow > 0 {
		c.ContextWindow = m.ContextWindow
	}
	if m.MaxTokens > 0 {
		c.MaxTokens = m.MaxTokens
	}
	if len(m.Input) > 0 {
		c.Input = m.Input
	}
	if len(m.Efforts) > 0 {
		c.Efforts = m.Efforts
	}
	c.DefaultEffort = m.DefaultEffort
	return c
}

// MapEffort is the member's effort for unified effort e (effort_map, else e).
func MapEffort(m *UnifiedModel, member, e string) string {
	if m != nil {
		if to, ok := m.EffortMap[member][e]; ok {
			return to
		}
	}
	return e
}

// Demands are what one request needs from a member.
type Demands struct {
	HasImage  bool
	Effort    string // unified effort requested, "" if none
	MaxTokens int    // requested output limit, 0 if none
}

// CannotServe says why member cannot serve the request, or "" if it can (or
// its capabilities are unknown). Checked: image input, effort after
// effort_map. A max_tokens above the member's limit does not
// skip it: the call is sent with the member's limit (MemberMaxTokens, SPEC
// POOL-25), so a session is not moved, losing its cache, for a limit.
func CannotServe(cfg *Config, p *PoolConfig, m *UnifiedModel, model, member string, d Demands) string {
	ch := cfg.Channel(member)
	if ch == nil {
		return "channel removed"
	}
	spec := ch.Model(p.Target(m, model, member))
	if spec == nil {
		return ""
	}
	if d.HasImage && len(spec.Input) > 0 && !contains(spec.Input, "image") {
		return "no image input"
	}
	if d.Effort != "" && len(spec.Efforts) > 0 {
		if me := MapEffort(m, member, d.Effort); !contains(spec.Efforts, me) {
			return fmt.Sprintf("effort %q not supported", me)
		}
	}
	return ""
}

// MemberMaxTokens is member's output limit for the request's model (tokens):
// the max_tokens its channel declares for its target model, else the
// unified model's explicit max_tokens; 0 when neither says.
func MemberMaxTokens(cfg *Config, p *PoolConfig, m *UnifiedModel, model, member string) int {
	if ch := cfg.Channel(member); ch != nil {
		if spec := ch.Model(p.Target(m, model, member)); spec != nil && spec.MaxTokens > 0 {
			return spec.MaxTokens
		}
	}
	if m != nil {
		return m.MaxTokens
	}
	return 0
}

// ModelInfo is one entry of GET /pool/{pool}/v1/models: the unified id, its
// display name and merged capabilities (SPEC POOL-1).
type ModelInfo struct {
	ID          string `json:"id"`
	DisplayName string `json:"display_name"`
	Capabilities
}

// ModelList is the pool's unified models with merged capabilities, sorted as
// configured. A pool without models: accepts every model id and sends it
// unchanged, so its list is what its members offer: every
// model its members' channels declare (channel models:), in member then
// declaration order, each id once, with the capabilities merged over the
// members that declare it.
func ModelList(cfg *Config, p *PoolConfig) []ModelInfo { return ModelListFetched(cfg, p, nil) }

// ModelListFetched is ModelList with, for a pool without models:, the
// lists fetched from members whose channel declares no models (fetched, by
// channel id; nil: none): their ids join the list in member order, unchanged
// as calls send them, each id once, context_window and max_tokens
// the minimum and input the union over the members that list it (an id a
// channel declares keeps its declared, merged capabilities).
func ModelListFetched(cfg *Config, p *PoolConfig, fetched map[string][]ModelInfo) []ModelInfo {
	if len(p.Models) == 0 {
		return memberModels(cfg, p, fetched)
	}
	out := make([]ModelInfo, 0, len(p.Models))
	for i := range p.Models {
		m := &p.Models[i]
		out = append(out, ModelInfo{ID: m.ID, DisplayName: m.Name, Capabilities: MergeCaps(cfg, p, m)})
	}
	return out
}

// memberModels is ModelListFetched for a pool without models:.
func memberModels(cfg *Config, p *PoolConfig, fetched map[string][]ModelInfo) []ModelInfo {
	out := []ModelInfo{}
	at := map[string]int{}        // id → index in out
	declared := map[string]bool{} // ids some channel declares
	for _, mem := range p.Members {
		ch := cfg.Channel(mem)
		if ch == nil {
			continue
		}
		for _, spec := range ch.Models {
			declared[spec.ID] = true
			if _, ok := at[spec.ID]; ok {
				continue
			}
			at[spec.ID] = len(out)
			out = append(out, ModelInfo{ID: spec.ID, DisplayName: spec.ID, Capabilities: MergeCaps(cfg, p, &UnifiedModel{ID: spec.ID})})
		}
		if len(ch.Models) > 0 {
			continue
		}
		for _, mi := range fetched[mem] {
			i, ok := at[mi.ID]
			switch {
			case !ok:
				at[mi.ID] = len(out)
				if mi.DisplayName == "" {
					mi.DisplayName = mi.ID
				}
				mi.Capabilities = Capabilities{ContextWindow: mi.ContextWindow, MaxTokens: mi.MaxTokens, Input: slices.Clone(mi.Input)}
				out = append(out, mi)
			case !declared[mi.ID]:
				c := &out[i].Capabilities
				c.ContextWindow, c.MaxTokens = minKnown(c.ContextWindow, mi.ContextWindow), minKnown(c.MaxTokens, mi.MaxTokens)
				for _, in := range mi.Input {
					if !slices.Contains(c.Input, in) {
						c.Input = append(c.Input, in)
					}
				}
			}
		}
	}
	return out
}

// minKnown is the smaller of two limits, 0 meaning unknown.
func minKnown(a, b int) int {
	if a == 0 || b != 0 && b < a {
		return b
	}
	return a
}
