package gemini

import (
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

// The Gemini generateContent request's decoders over one scan
// (decodeValid): one per wire struct, a switch over its JSON names.

// The JSON names of each decoded struct's fields, for scanMembers' check of
// keys that match one only ignoring case.
var (
	gmRequestFields = []string{"contents", "systemInstruction", "tools", "toolConfig", "generationConfig", "safetySettings"}
	gmContentFields = []string{"role", "parts"}
	gmPartFields    = []string{"text", "thought", "thoughtSignature", "inlineData", "fileData", "functionCall", "functionResponse"}
	gmToolFields    = []string{"functionDeclarations"}
	gmFuncFields    = []string{"name", "description", "parameters", "parametersJsonSchema"}
)

// scanGmRequest decodes the generateContent request object b into w,
// recording its top-level keys in keys.
func scanGmRequest(b []byte, w *gmRequest, keys map[string]wirefmt.KeyOnly) bool {
	return wirefmt.ScanMembers(b, gmRequestFields, keys, func(key, v []byte) (bool, bool) {
		switch string(key) {
		case "contents":
			return true, wirefmt.ScanArray(v, &w.Contents, scanGmContent)
		case "systemInstruction":
			return true, wirefmt.Unmarshal(v, &w.SystemInstruction)
		case "tools":
			return true, wirefmt.ScanArray(v, &w.Tools, scanGmTool)
		case "toolConfig":
			return true, wirefmt.Unmarshal(v, &w.ToolConfig)
		case "generationConfig":
			return true, wirefmt.Unmarshal(v, &w.GenerationConfig)
		case "safetySettings":
			return true, wirefmt.Unmarshal(v, &w.SafetySettings)
		}
		return false, true
	})
}

// scanGmContent decodes one content of a valid request body by one scan.
func scanGmContent(b []byte, c *gmContent) bool {
	return wirefmt.ScanMembers(b, gmContentFields, nil, func(key, v []byte) (bool, bool) {
		switch string(key) {
		case "role":
			return true, wirefmt.ScanString(v, &c.Role)
		case "parts":
			return true, wirefmt.ScanArray(v, &c.Parts, scanGmPart)
		}
		return false, true
	})
}

// scanGmPart decodes one part of a valid request body by one scan.
func scanGmPart(b []byte, p *gmPart) bool {
	return wirefmt.ScanMembers(b, gmPartFields, nil, func(key, v []byte) (bool, bool) {
		switch string(key) {
		case "text":
			return true, wirefmt.Unmarshal(v, &p.Text)
		case "thought":
			return true, wirefmt.Unmarshal(v, &p.Thought)
		case "thoughtSignature":
			return true, wirefmt.ScanString(v, &p.ThoughtSignature)
		case "inlineData":
			return true, wirefmt.Unmarshal(v, &p.InlineData)
		case "fileData":
			return true, wirefmt.Unmarshal(v, &p.FileData)
		case "functionCall":
			return true, wirefmt.Unmarshal(v, &p.FunctionCall)
		case "functionResponse":
			return true, wirefmt.Unmarshal(v, &p.FunctionResponse)
		}
		return false, true
	})
}

// scanGmTool decodes one tool of a valid request body by one scan.
func scanGmTool(b []byte, t *gmTool) bool {
	return wirefmt.ScanMembers(b, gmToolFields, nil, func(key, v []byte) (bool, bool) {
		if string(key) == "functionDeclarations" {
			return true, wirefmt.ScanArray(v, &t.FunctionDeclarations, scanGmFunc)
		}
		return false, true
	})
}

// scanGmFunc decodes one function declaration by one scan.
func scanGmFunc(b []byte, f *gmFunc) bool {
	return wirefmt.ScanMembers(b, gmFuncFields, nil, func(key, v []byte) (bool, bool) {
		switch string(key) {
		case "name":
			return true, wirefmt.ScanString(v, &f.Name)
		case "description":
			return true, wirefmt.ScanString(v, &f.Description)
		case "parameters":
			return true, wirefmt.ScanRaw(v, &f.Parameters)
		case "parametersJsonSchema":
			return true, wirefmt.ScanRaw(v, &f.ParametersJSONSchema)
		}
		return false, true
	})
}
