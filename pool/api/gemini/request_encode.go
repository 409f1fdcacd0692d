package gemini

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

// encodeGeminiRequest writes r as a generateContent body (the model and
// stream go into the URL: geminiPath). Reasoning parts are dropped (Gemini
// takes no thoughts back); function calls from other APIs carry Gemini's
// placeholder thought signature; parallel_tool_calls has no Gemini
// equivalent and is dropped; tool results become functionResponse
// {"output": text} or, for errors, {"error": text}.
func encodeGeminiRequest(r *neutral.Request) ([]byte, error) {
	w := gmRequest{Contents: []gmContent{}}
	if len(r.System) > 0 {
		s := strings.Join(r.System, "\n\n")
		w.SystemInstruction = &gmContent{Parts: []gmPart{{Text: &s}}}
	}
	names := map[string]string{} // call id → function name (Anthropic results omit it)
	for i, m := range r.Messages {
		for _, p := range m.Parts {
			if p.Kind == neutral.KindToolCall {
				names[p.CallID] = p.Name
			}
		}
		c, err := encodeGmMessage(fmt.Sprintf("messages[%d]", i), m, names)
		if err != nil {
			return nil, err
		}
		if len(c.Parts) > 0 {
			w.Contents = append(w.Contents, c)
		}
	}
	if len(r.Tools) > 0 {
		var fs []gmFunc
		for _, t := range r.Tools {
			schema := t.Schema
			if len(schema) == 0 {
				schema = json.RawMessage(`{"type":"object"}`)
			}
			fs = append(fs, gmFunc{Name: t.Name, Description: t.Description, ParametersJSONSchema: schema})
		}
		w.Tools = []gmTool{{FunctionDeclarations: fs}}
	}
	if mode := r.ToolChoice.Mode; mode != neutral.ChoiceDefault {
		w.ToolConfig = &gmToolConfig{FunctionCallingConfig: &struct {
			Mode                 string   `json:"mode,omitempty"`
			AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
		}{}}
		fc := w.ToolConfig.FunctionCallingConfig
		switch mode {
		case neutral.ChoiceAuto:
			fc.Mode = "AUTO"
		case neutral.ChoiceNone:
			fc.Mode = "NONE"
		case neutral.ChoiceRequired:
			fc.Mode = "ANY"
		case neutral.ChoiceTool:
			fc.Mode, fc.AllowedFunctionNames = "ANY", []string{r.ToolChoice.Name}
		}
	}
	w.GenerationConfig = encodeGmGenConfig(r)
	return wirefmt.MustJSON(w), nil
}

func encodeGmGenConfig(r *neutral.Request) *gmGenConfig {
	g := &gmGenConfig{Temperature: r.Temperature, TopP: r.TopP, TopK: r.TopK, MaxOutputTokens: r.MaxTokens, StopSequences: r.Stop}
	if f := r.Format; f != nil {
		g.ResponseMimeType = "application/json"
		if f.Type == "json_schema" {
			g.ResponseJSONSchema = f.Schema
		}
	}
	re := r.Reasoning
	switch {
	case re.Disabled || re.Effort == "none":
		g.ThinkingConfig = &gmThinkingConfig{ThinkingBudget: wirefmt.Ptr(0)}
	case re.Budget > 0:
		g.ThinkingConfig = &gmThinkingConfig{IncludeThoughts: true, ThinkingBudget: wirefmt.Ptr(re.Budget)}
	case re.Effort != "":
		g.ThinkingConfig = &gmThinkingConfig{IncludeThoughts: true, ThinkingBudget: wirefmt.Ptr(neutral.EffortBudget[re.Effort])}
	}
	if g.Temperature == nil && g.TopP == nil && g.TopK == nil && g.MaxOutputTokens == 0 && len(g.StopSequences) == 0 &&
		g.ResponseMimeType == "" && g.ThinkingConfig == nil {
		return nil
	}
	return g
}

func encodeGmMessage(field string, m neutral.Message, names map[string]string) (gmContent, error) {
	c := gmContent{Role: "user"}
	if m.Role == neutral.RoleAssistant {
		c.Role = "model"
	}
	for j, p := range m.Parts {
		pf := fmt.Sprintf("%s.content[%d]", field, j)
		switch p.Kind {
		case neutral.KindText:
			t := p.Text
			c.Parts = append(c.Parts, gmPart{Text: &t})
		case neutral.KindImage:
			gp, err := gmImage(pf, p)
			if err != nil {
				return c, err
			}
			c.Parts = append(c.Parts, gp)
		case neutral.KindToolCall:
			args, err := neutral.RawArgs(pf+".arguments", p.Args)
			if err != nil {
				return c, err
			}
			c.Parts = append(c.Parts, gmPart{FunctionCall: &gmCall{Name: p.Name, Args: args}, ThoughtSignature: skipSignature})
		case neutral.KindToolResult:
			if p.Name == "" {
				p.Name = names[p.CallID]
			}
			if p.Name == "" {
				return c, neutral.FieldErr(pf+".name", "Gemini needs the function name of a tool result; its call is not in the conversation")
			}
			text, err := neutral.TextOnly(pf+".content", p.Content)
			if err != nil {
				return c, neutral.FieldErr(pf+".content", "tool results with images are not expressible in Gemini")
			}
			key := "output"
			if p.IsError {
				key = "error"
			}
			c.Parts = append(c.Parts, gmPart{FunctionResponse: &gmCallResult{Name: p.Name, Response: wirefmt.MustJSON(map[string]string{key: text})}})
		}
	}
	return c, nil
}

func gmImage(field string, p neutral.Part) (gmPart, error) {
	if p.URL == "" {
		return gmPart{InlineData: &gmBlob{MimeType: p.MediaType, Data: p.Data}}, nil
	}
	mt := imageMime(p.URL)
	if mt == "" {
		return gmPart{}, neutral.FieldErr(field+".url", "Gemini needs the media type of a linked image; the URL has no known image extension")
	}
	return gmPart{FileData: &gmFile{MimeType: mt, FileURI: p.URL}}, nil
}

// geminiPath is the member path for a Gemini call: generateContent, or
// streamGenerateContent with alt=sse; the model is one path segment
// (modelSegment).
func geminiPath(model string, stream bool) string {
	if stream {
		return "/v1beta/models/" + modelSegment(model) + ":streamGenerateContent?alt=sse"
	}
	return "/v1beta/models/" + modelSegment(model) + ":generateContent"
}

// modelSegment is model escaped as one path segment (RFC 3986 §3.3,
// url.PathEscape, which keeps ':' and '@'): a client's id such as
// "../../v1beta/cachedContents?x=" names a model, never another path or a
// query of the member (SPEC POOL-1). The escaped form survives url.Parse as
// the URL's RawPath, so "%2F" stays "%2F" on the wire.
func modelSegment(model string) string { return url.PathEscape(model) }
