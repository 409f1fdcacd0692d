package translate

import (
	"encoding/json"
	"fmt"
	"strings"
)

// EncodeGeminiRequest writes r as a generateContent body (the model and
// stream go into the URL: GeminiPath). Reasoning parts are dropped (Gemini
// takes no thoughts back); function calls from other APIs carry Gemini's
// placeholder thought signature; parallel_tool_calls has no Gemini
// equivalent and is dropped; tool results become functionResponse
// {"output": text} or, for errors, {"error": text}.
func EncodeGeminiRequest(r *Request) ([]byte, error) {
	w := gmRequest{Contents: []gmContent{}}
	if len(r.System) > 0 {
		s := strings.Join(r.System, "\n\n")
		w.SystemInstruction = &gmContent{Parts: []gmPart{{Text: &s}}}
	}
	names := map[string]string{} // call id → function name (Anthropic results omit it)
	for i, m := range r.Messages {
		for _, p := range m.Parts {
			if p.Kind == KindToolCall {
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
	if mode := r.ToolChoice.Mode; mode != ChoiceDefault {
		w.ToolConfig = &gmToolConfig{FunctionCallingConfig: &struct {
			Mode                 string   `json:"mode,omitempty"`
			AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
		}{}}
		fc := w.ToolConfig.FunctionCallingConfig
		switch mode {
		case ChoiceAuto:
			fc.Mode = "AUTO"
		case ChoiceNone:
			fc.Mode = "NONE"
		case ChoiceRequired:
			fc.Mode = "ANY"
		case ChoiceTool:
			fc.Mode, fc.AllowedFunctionNames = "ANY", []string{r.ToolChoice.Name}
		}
	}
	w.GenerationConfig = encodeGmGenConfig(r)
	return mustJSON(w), nil
}

func encodeGmGenConfig(r *Request) *gmGenConfig {
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
		g.ThinkingConfig = &gmThinkingConfig{ThinkingBudget: ptr(0)}
	case re.Budget > 0:
		g.ThinkingConfig = &gmThinkingConfig{IncludeThoughts: true, ThinkingBudget: ptr(re.Budget)}
	case re.Effort != "":
		g.ThinkingConfig = &gmThinkingConfig{IncludeThoughts: true, ThinkingBudget: ptr(effortBudget[re.Effort])}
	}
	if g.Temperature == nil && g.TopP == nil && g.TopK == nil && g.MaxOutputTokens == 0 && len(g.StopSequences) == 0 &&
		g.ResponseMimeType == "" && g.ThinkingConfig == nil {
		return nil
	}
	return g
}

func encodeGmMessage(field string, m Message, names map[string]string) (gmContent, error) {
	c := gmContent{Role: "user"}
	if m.Role == RoleAssistant {
		c.Role = "model"
	}
	for j, p := range m.Parts {
		pf := fmt.Sprintf("%s.content[%d]", field, j)
		switch p.Kind {
		case KindText:
			t := p.Text
			c.Parts = append(c.Parts, gmPart{Text: &t})
		case KindImage:
			gp, err := gmImage(pf, p)
			if err != nil {
				return c, err
			}
			c.Parts = append(c.Parts, gp)
		case KindToolCall:
			args, err := rawArgs(pf+".arguments", p.Args)
			if err != nil {
				return c, err
			}
			c.Parts = append(c.Parts, gmPart{FunctionCall: &gmCall{Name: p.Name, Args: args}, ThoughtSignature: skipSignature})
		case KindToolResult:
			if p.Name == "" {
				p.Name = names[p.CallID]
			}
			if p.Name == "" {
				return c, fieldErr(pf+".name", "Gemini needs the function name of a tool result; its call is not in the conversation")
			}
			text, err := textOnly(pf+".content", p.Content)
			if err != nil {
				return c, fieldErr(pf+".content", "tool results with images are not expressible in Gemini")
			}
			key := "output"
			if p.IsError {
				key = "error"
			}
			c.Parts = append(c.Parts, gmPart{FunctionResponse: &gmCallResult{Name: p.Name, Response: mustJSON(map[string]string{key: text})}})
		}
	}
	return c, nil
}

func gmImage(field string, p Part) (gmPart, error) {
	if p.URL == "" {
		return gmPart{InlineData: &gmBlob{MimeType: p.MediaType, Data: p.Data}}, nil
	}
	mt := imageMime(p.URL)
	if mt == "" {
		return gmPart{}, fieldErr(field+".url", "Gemini needs the media type of a linked image; the URL has no known image extension")
	}
	return gmPart{FileData: &gmFile{MimeType: mt, FileURI: p.URL}}, nil
}

// GeminiPath is the member path for a Gemini call: generateContent, or
// streamGenerateContent with alt=sse.
func GeminiPath(model string, stream bool) string {
	if stream {
		return "/v1beta/models/" + model + ":streamGenerateContent?alt=sse"
	}
	return "/v1beta/models/" + model + ":generateContent"
}
