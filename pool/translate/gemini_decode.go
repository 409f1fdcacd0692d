package translate

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
func scanGmRequest(b []byte, w *gmRequest, keys map[string]keyOnly) bool {
	return scanMembers(b, gmRequestFields, keys, func(key, v []byte) (bool, bool) {
		switch string(key) {
		case "contents":
			return true, scanArray(v, &w.Contents, scanGmContent)
		case "systemInstruction":
			return true, unmarshal(v, &w.SystemInstruction)
		case "tools":
			return true, scanArray(v, &w.Tools, scanGmTool)
		case "toolConfig":
			return true, unmarshal(v, &w.ToolConfig)
		case "generationConfig":
			return true, unmarshal(v, &w.GenerationConfig)
		case "safetySettings":
			return true, unmarshal(v, &w.SafetySettings)
		}
		return false, true
	})
}

func scanGmContent(b []byte, c *gmContent) bool {
	return scanMembers(b, gmContentFields, nil, func(key, v []byte) (bool, bool) {
		switch string(key) {
		case "role":
			return true, scanString(v, &c.Role)
		case "parts":
			return true, scanArray(v, &c.Parts, scanGmPart)
		}
		return false, true
	})
}

func scanGmPart(b []byte, p *gmPart) bool {
	return scanMembers(b, gmPartFields, nil, func(key, v []byte) (bool, bool) {
		switch string(key) {
		case "text":
			return true, unmarshal(v, &p.Text)
		case "thought":
			return true, unmarshal(v, &p.Thought)
		case "thoughtSignature":
			return true, scanString(v, &p.ThoughtSignature)
		case "inlineData":
			return true, unmarshal(v, &p.InlineData)
		case "fileData":
			return true, unmarshal(v, &p.FileData)
		case "functionCall":
			return true, unmarshal(v, &p.FunctionCall)
		case "functionResponse":
			return true, unmarshal(v, &p.FunctionResponse)
		}
		return false, true
	})
}

func scanGmTool(b []byte, t *gmTool) bool {
	return scanMembers(b, gmToolFields, nil, func(key, v []byte) (bool, bool) {
		if string(key) == "functionDeclarations" {
			return true, scanArray(v, &t.FunctionDeclarations, scanGmFunc)
		}
		return false, true
	})
}

func scanGmFunc(b []byte, f *gmFunc) bool {
	return scanMembers(b, gmFuncFields, nil, func(key, v []byte) (bool, bool) {
		switch string(key) {
		case "name":
			return true, scanString(v, &f.Name)
		case "description":
			return true, scanString(v, &f.Description)
		case "parameters":
			return true, scanRaw(v, &f.Parameters)
		case "parametersJsonSchema":
			return true, scanRaw(v, &f.ParametersJSONSchema)
		}
		return false, true
	})
}
