package gemini

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
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
// history whose signature the model cannot verify, such as function calls
// that did not come from Gemini (ai.google.dev "Thought signatures"):
// accepted by every Gemini model, and Gemini 3 refuses history function
// calls without one.
const skipSignature = "skip_thought_signature_validator"

// decodeRequest reads a generateContent body; valid says body is known to be
// valid JSON (ParseRequest accepted it), so it is decoded by one scan; model
// and stream come from the URL. Both proto-JSON spellings are accepted
// (systemInstruction and system_instruction). Built-in tools (googleSearch,
// codeExecution…), cachedContent, non-image media and candidateCount > 1 are
// FieldErrors; thought signatures are dropped.
func decodeRequest(body []byte, model string, stream bool, valid bool) (*neutral.Request, error) {
	var raw any
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, &neutral.FieldError{Field: "body", Reason: "not JSON: " + err.Error()}
	}
	body = wirefmt.MustJSON(camelKeys(raw))
	var w gmRequest
	if err := neutral.ObjectKeys(body, &w, scanGmRequest, gmKnownKeys, gmIgnoredKeys, valid); err != nil {
		return nil, err
	}
	if err := checkGeminiNested(body); err != nil {
		return nil, err
	}
	r := &neutral.Request{Model: model, Stream: stream}
	if w.SystemInstruction != nil {
		for i, p := range w.SystemInstruction.Parts {
			if p.Text == nil {
				return nil, neutral.FieldErr(fmt.Sprintf("systemInstruction.parts[%d]", i), "only text is translatable")
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
			r.Tools = append(r.Tools, neutral.Tool{Name: f.Name, Description: f.Description, Schema: schema})
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
		if err := neutral.CheckKeys(fmt.Sprintf("tools[%d].", i), t, []string{"functionDeclarations"}, nil); err != nil {
			return err
		}
	}
	return neutral.CheckKeys("generationConfig.", top.Gen, gmGenKeys, gmGenIgnored)
}

func decodeGmToolConfig(tc *gmToolConfig, r *neutral.Request) error {
	if tc == nil || tc.FunctionCallingConfig == nil {
		return nil
	}
	fc := tc.FunctionCallingConfig
	switch fc.Mode {
	case "", "MODE_UNSPECIFIED", "AUTO", "VALIDATED":
		r.ToolChoice.Mode = neutral.ChoiceAuto
	case "NONE":
		r.ToolChoice.Mode = neutral.ChoiceNone
	case "ANY":
		r.ToolChoice.Mode = neutral.ChoiceRequired
		switch len(fc.AllowedFunctionNames) {
		case 0:
		case 1:
			r.ToolChoice = neutral.ToolChoice{Mode: neutral.ChoiceTool, Name: fc.AllowedFunctionNames[0]}
		default:
			return neutral.FieldErr("toolConfig.functionCallingConfig.allowedFunctionNames", "more than one name is not translatable")
		}
	default:
		return neutral.FieldErr("toolConfig.functionCallingConfig.mode", "unknown value %q", fc.Mode)
	}
	return nil
}

func decodeGmGenConfig(g *gmGenConfig, r *neutral.Request) error {
	if g == nil {
		return nil
	}
	if g.CandidateCount != nil && *g.CandidateCount != 1 {
		return neutral.FieldErr("generationConfig.candidateCount", "only 1 candidate is translatable")
	}
	for _, m := range g.ResponseModalities {
		if !strings.EqualFold(m, "text") {
			return neutral.FieldErr("generationConfig.responseModalities", "%q output is not translatable", m)
		}
	}
	r.Temperature, r.TopP, r.TopK, r.MaxTokens, r.Stop = g.Temperature, g.TopP, g.TopK, g.MaxOutputTokens, g.StopSequences
	switch g.ResponseMimeType {
	case "", "text/plain":
	case "application/json":
		r.Format = &neutral.Format{Type: "json_object"}
		if s := g.ResponseJSONSchema; len(s) > 0 {
			r.Format = &neutral.Format{Type: "json_schema", Schema: s}
		} else if len(g.ResponseSchema) > 0 {
			r.Format = &neutral.Format{Type: "json_schema", Schema: openAPISchema(g.ResponseSchema)}
		}
	default:
		return neutral.FieldErr("generationConfig.responseMimeType", "%q is not translatable", g.ResponseMimeType)
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
			if neutral.EffortRank(l) < 0 {
				return neutral.FieldErr("generationConfig.thinkingConfig.thinkingLevel", "unknown value %q", tc.ThinkingLevel)
			}
			r.Reasoning.Effort = l
		}
	}
	return nil
}

func decodeGmContents(cs []gmContent, r *neutral.Request) error {
	pending := map[string][]string{} // function name → ids of calls not yet answered
	calls := 0
	for i, c := range cs {
		msg := neutral.Message{Role: neutral.RoleUser}
		switch c.Role {
		case "model":
			msg.Role = neutral.RoleAssistant
		case "", "user", "function":
		default:
			return neutral.FieldErr(fmt.Sprintf("contents[%d].role", i), "unknown role %q", c.Role)
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
		r.Messages = neutral.AppendMessage(r.Messages, msg)
	}
	return nil
}

func decodeGmPart(field string, p gmPart, pending map[string][]string, calls *int) (neutral.Part, error) {
	switch {
	case p.Text != nil && p.Thought:
		return neutral.Part{Kind: neutral.KindReasoning, Text: *p.Text}, nil
	case p.Text != nil:
		return neutral.Part{Kind: neutral.KindText, Text: *p.Text}, nil
	case p.InlineData != nil:
		if !strings.HasPrefix(p.InlineData.MimeType, "image/") {
			return neutral.Part{}, neutral.FieldErr(field+".inlineData.mimeType", "%q is not translatable (images only)", p.InlineData.MimeType)
		}
		return neutral.Part{Kind: neutral.KindImage, MediaType: p.InlineData.MimeType, Data: p.InlineData.Data}, nil
	case p.FileData != nil:
		if !strings.HasPrefix(p.FileData.MimeType, "image/") {
			return neutral.Part{}, neutral.FieldErr(field+".fileData.mimeType", "%q is not translatable (images only)", p.FileData.MimeType)
		}
		return neutral.Part{Kind: neutral.KindImage, URL: p.FileData.FileURI}, nil
	case p.FunctionCall != nil:
		fc := p.FunctionCall
		id := fc.ID
		if id == "" {
			*calls++
			id = fmt.Sprintf("call_gemini_%d", *calls)
		}
		pending[fc.Name] = append(pending[fc.Name], id)
		return neutral.Part{Kind: neutral.KindToolCall, CallID: id, Name: fc.Name, Args: neutral.ArgsOrEmpty(string(fc.Args))}, nil
	case p.FunctionResponse != nil:
		fr := p.FunctionResponse
		id := fr.ID
		if q := pending[fr.Name]; len(q) > 0 {
			if id == "" || id == q[0] {
				id, pending[fr.Name] = q[0], q[1:]
			}
		}
		text, isErr := gmResultText(fr.Response)
		return neutral.Part{Kind: neutral.KindToolResult, CallID: id, Name: fr.Name, IsError: isErr, Content: []neutral.Part{{Kind: neutral.KindText, Text: text}}}, nil
	case p.ThoughtSignature != "":
		return neutral.Part{}, nil // a lone signature: Gemini's own, dropped
	}
	return neutral.Part{}, neutral.FieldErr(field, "part kind is not translatable (text, images, function calls and responses only)")
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
