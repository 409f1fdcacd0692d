package translate

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Gemini generateContent request wire types (ai.google.dev "Generating
// content"). The model and streaming are in the URL, not the body.
type gmRequest struct {
	Contents          []gmContent       `json:"contents"`
	SystemInstruction *gmContent        `json:"systemInstruction,omitempty"`
	Tools             []gmTool          `json:"tools,omitempty"`
	ToolConfig        *gmToolConfig     `json:"toolConfig,omitempty"`
	GenerationConfig  *gmGenConfig      `json:"generationConfig,omitempty"`
	SafetySettings    []json.RawMessage `json:"safetySettings,omitempty"`
}

type gmContent struct {
	Role  string   `json:"role,omitempty"`
	Parts []gmPart `json:"parts"`
}

type gmPart struct {
	Text             *string       `json:"text,omitempty"`
	Thought          bool          `json:"thought,omitempty"`
	ThoughtSignature string        `json:"thoughtSignature,omitempty"`
	InlineData       *gmBlob       `json:"inlineData,omitempty"`
	FileData         *gmFile       `json:"fileData,omitempty"`
	FunctionCall     *gmCall       `json:"functionCall,omitempty"`
	FunctionResponse *gmCallResult `json:"functionResponse,omitempty"`
}

type gmBlob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

type gmFile struct {
	MimeType string `json:"mimeType,omitempty"`
	FileURI  string `json:"fileUri"`
}

type gmCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

type gmCallResult struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

type gmTool struct {
	FunctionDeclarations []gmFunc `json:"functionDeclarations,omitempty"`
}

type gmFunc struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description,omitempty"`
	Parameters           json.RawMessage `json:"parameters,omitempty"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
}

type gmToolConfig struct {
	FunctionCallingConfig *struct {
		Mode                 string   `json:"mode,omitempty"`
		AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
	} `json:"functionCallingConfig,omitempty"`
}

type gmGenConfig struct {
	Temperature        *float64          `json:"temperature,omitempty"`
	TopP               *float64          `json:"topP,omitempty"`
	TopK               *int              `json:"topK,omitempty"`
	MaxOutputTokens    int               `json:"maxOutputTokens,omitempty"`
	StopSequences      []string          `json:"stopSequences,omitempty"`
	CandidateCount     *int              `json:"candidateCount,omitempty"`
	ResponseMimeType   string            `json:"responseMimeType,omitempty"`
	ResponseSchema     json.RawMessage   `json:"responseSchema,omitempty"`
	ResponseJSONSchema json.RawMessage   `json:"responseJsonSchema,omitempty"`
	ThinkingConfig     *gmThinkingConfig `json:"thinkingConfig,omitempty"`
	ResponseModalities []string          `json:"responseModalities,omitempty"`
}

type gmThinkingConfig struct {
	IncludeThoughts bool   `json:"includeThoughts,omitempty"`
	ThinkingBudget  *int   `json:"thinkingBudget,omitempty"`
	ThinkingLevel   string `json:"thinkingLevel,omitempty"`
}

var (
	gmKnownKeys = []string{"contents", "systemInstruction", "tools", "toolConfig", "generationConfig", "safetySettings", "model"}
	// Dropped: billing labels. safetySettings are decoded and dropped too
	// (the other APIs have no per-request safety thresholds).
	gmIgnoredKeys = []string{"labels"}
	gmGenKeys     = []string{"temperature", "topP", "topK", "maxOutputTokens", "stopSequences", "candidateCount",
		"responseMimeType", "responseSchema", "responseJsonSchema", "thinkingConfig", "responseModalities"}
	gmGenIgnored = []string{"presencePenalty", "frequencyPenalty", "seed"}
	// gmOpaque holds user data whose keys are not Gemini field names.
	gmOpaque = []string{"args", "response", "parameters", "parametersJsonSchema", "responseSchema", "responseJsonSchema", "response_schema", "response_json_schema", "parameters_json_schema"}
)

// skipSignature is Gemini's documented placeholder thoughtSignature for
// function calls that did not come from Gemini (ai.google.dev "Thought
// signatures"): Gemini 3 refuses history function calls without one.
const skipSignature = "skip_thought_signature_validator"

// DecodeGeminiRequest reads a generateContent body; model and stream come
// from the URL. Both proto-JSON spellings are accepted (systemInstruction
// and system_instruction). Built-in tools (googleSearch, codeExecution…),
// cachedContent, non-image media and candidateCount > 1 are FieldErrors;
// thought signatures are dropped.
func DecodeGeminiRequest(body []byte, model string, stream bool) (*Request, error) {
	return decodeGeminiRequest(body, model, stream, false)
}

// decodeGeminiRequest is DecodeGeminiRequest; valid says body is known to be valid JSON
// (objectKeys).
func decodeGeminiRequest(body []byte, model string, stream bool, valid bool) (*Request, error) {
	var raw any
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, &FieldError{Field: "body", Reason: "not JSON: " + err.Error()}
	}
	body = mustJSON(camelKeys(raw))
	var w gmRequest
	if err := objectKeys(body, &w, scanGmRequest, gmKnownKeys, gmIgnoredKeys, valid); err != nil {
		return nil, err
	}
	if err := checkGeminiNested(body); err != nil {
		return nil, err
	}
	r := &Request{Model: model, Stream: stream}
	if w.SystemInstruction != nil {
		for i, p := range w.SystemInstruction.Parts {
			if p.Text == nil {
				return nil, fieldErr(fmt.Sprintf("systemInstruction.parts[%d]", i), "only text is translatable")
			}
			r.System = append(r.System, *p.Text)
		}
	}
	if err := decodeGmContents(w.Contents, r); err != nil {
		return nil, err
	}
	for _, t := range w.Tools {
		for _, f := range t.FunctionDeclarations {
			schema := f.ParametersJSONSchema
			if len(schema) == 0 {
				schema = openAPISchema(f.Parameters)
			}
			r.Tools = append(r.Tools, Tool{Name: f.Name, Description: f.Description, Schema: schema})
		}
	}
	if err := decodeGmToolConfig(w.ToolConfig, r); err != nil {
		return nil, err
	}
	return r, decodeGmGenConfig(w.GenerationConfig, r)
}

// checkGeminiNested refuses unknown keys inside tools and generationConfig.
func checkGeminiNested(body []byte) error {
	var top struct {
		Tools []map[string]json.RawMessage `json:"tools"`
		Gen   map[string]json.RawMessage   `json:"generationConfig"`
	}
	_ = json.Unmarshal(body, &top)
	for i, t := range top.Tools {
		if err := checkKeys(fmt.Sprintf("tools[%d].", i), t, []string{"functionDeclarations"}, nil); err != nil {
			return err
		}
	}
	return checkKeys("generationConfig.", top.Gen, gmGenKeys, gmGenIgnored)
}

func decodeGmToolConfig(tc *gmToolConfig, r *Request) error {
	if tc == nil || tc.FunctionCallingConfig == nil {
		return nil
	}
	fc := tc.FunctionCallingConfig
	switch fc.Mode {
	case "", "MODE_UNSPECIFIED", "AUTO", "VALIDATED":
		r.ToolChoice.Mode = ChoiceAuto
	case "NONE":
		r.ToolChoice.Mode = ChoiceNone
	case "ANY":
		r.ToolChoice.Mode = ChoiceRequired
		switch len(fc.AllowedFunctionNames) {
		case 0:
		case 1:
			r.ToolChoice = ToolChoice{Mode: ChoiceTool, Name: fc.AllowedFunctionNames[0]}
		default:
			return fieldErr("toolConfig.functionCallingConfig.allowedFunctionNames", "more than one name is not translatable")
		}
	default:
		return fieldErr("toolConfig.functionCallingConfig.mode", "unknown value %q", fc.Mode)
	}
	return nil
}

func decodeGmGenConfig(g *gmGenConfig, r *Request) error {
	if g == nil {
		return nil
	}
	if g.CandidateCount != nil && *g.CandidateCount != 1 {
		return fieldErr("generationConfig.candidateCount", "only 1 candidate is translatable")
	}
	for _, m := range g.ResponseModalities {
		if !strings.EqualFold(m, "text") {
			return fieldErr("generationConfig.responseModalities", "%q output is not translatable", m)
		}
	}
	r.Temperature, r.TopP, r.TopK, r.MaxTokens, r.Stop = g.Temperature, g.TopP, g.TopK, g.MaxOutputTokens, g.StopSequences
	switch g.ResponseMimeType {
	case "", "text/plain":
	case "application/json":
		r.Format = &Format{Type: "json_object"}
		if s := g.ResponseJSONSchema; len(s) > 0 {
			r.Format = &Format{Type: "json_schema", Schema: s}
		} else if len(g.ResponseSchema) > 0 {
			r.Format = &Format{Type: "json_schema", Schema: openAPISchema(g.ResponseSchema)}
		}
	default:
		return fieldErr("generationConfig.responseMimeType", "%q is not translatable", g.ResponseMimeType)
	}
	if tc := g.ThinkingConfig; tc != nil {
		if tc.ThinkingBudget != nil {
			switch b := *tc.ThinkingBudget; {
			case b == 0:
				r.Reasoning.Disabled = true
			case b > 0:
				r.Reasoning.Budget = b
			}
		}
		if l := strings.ToLower(tc.ThinkingLevel); l != "" {
			if effortRank(l) < 0 {
				return fieldErr("generationConfig.thinkingConfig.thinkingLevel", "unknown value %q", tc.ThinkingLevel)
			}
			r.Reasoning.Effort = l
		}
	}
	return nil
}

func decodeGmContents(cs []gmContent, r *Request) error {
	pending := map[string][]string{} // function name → ids of calls not yet answered
	calls := 0
	for i, c := range cs {
		msg := Message{Role: RoleUser}
		switch c.Role {
		case "model":
			msg.Role = RoleAssistant
		case "", "user", "function":
		default:
			return fieldErr(fmt.Sprintf("contents[%d].role", i), "unknown role %q", c.Role)
		}
		for j, p := range c.Parts {
			field := fmt.Sprintf("contents[%d].parts[%d]", i, j)
			np, err := decodeGmPart(field, p, pending, &calls)
			if err != nil {
				return err
			}
			if np.Kind != 0 {
				msg.Parts = append(msg.Parts, np)
			}
		}
		r.Messages = appendMessage(r.Messages, msg)
	}
	return nil
}

func decodeGmPart(field string, p gmPart, pending map[string][]string, calls *int) (Part, error) {
	switch {
	case p.Text != nil && p.Thought:
		return Part{Kind: KindReasoning, Text: *p.Text}, nil
	case p.Text != nil:
		return Part{Kind: KindText, Text: *p.Text}, nil
	case p.InlineData != nil:
		if !strings.HasPrefix(p.InlineData.MimeType, "image/") {
			return Part{}, fieldErr(field+".inlineData.mimeType", "%q is not translatable (images only)", p.InlineData.MimeType)
		}
		return Part{Kind: KindImage, MediaType: p.InlineData.MimeType, Data: p.InlineData.Data}, nil
	case p.FileData != nil:
		if !strings.HasPrefix(p.FileData.MimeType, "image/") {
			return Part{}, fieldErr(field+".fileData.mimeType", "%q is not translatable (images only)", p.FileData.MimeType)
		}
		return Part{Kind: KindImage, URL: p.FileData.FileURI}, nil
	case p.FunctionCall != nil:
		fc := p.FunctionCall
		id := fc.ID
		if id == "" {
			*calls++
			id = fmt.Sprintf("call_gemini_%d", *calls)
		}
		pending[fc.Name] = append(pending[fc.Name], id)
		return Part{Kind: KindToolCall, CallID: id, Name: fc.Name, Args: argsOrEmpty(string(fc.Args))}, nil
	case p.FunctionResponse != nil:
		fr := p.FunctionResponse
		id := fr.ID
		if q := pending[fr.Name]; len(q) > 0 {
			if id == "" || id == q[0] {
				id, pending[fr.Name] = q[0], q[1:]
			}
		}
		text, isErr := gmResultText(fr.Response)
		return Part{Kind: KindToolResult, CallID: id, Name: fr.Name, IsError: isErr, Content: []Part{{Kind: KindText, Text: text}}}, nil
	case p.ThoughtSignature != "":
		return Part{}, nil // a lone signature: Gemini's own, dropped
	}
	return Part{}, fieldErr(field, "part kind is not translatable (text, images, function calls and responses only)")
}

// gmResultText reads a functionResponse.response object: {"output": x} or
// {"error": x} (Gemini's convention) give x as text; anything else is sent
// as its JSON text.
func gmResultText(resp json.RawMessage) (string, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(resp, &m) == nil && len(m) == 1 {
		for k, v := range m {
			if k == "output" || k == "error" || k == "content" || k == "result" {
				var s string
				if json.Unmarshal(v, &s) != nil {
					s = string(v)
				}
				return s, k == "error"
			}
		}
	}
	return string(resp), false
}
