package responses

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dual-proxy/dual-proxy/pool/api/chat"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

// Responses answer wire types.
type rsResponse struct {
	ID                string    `json:"id"`
	Object            string    `json:"object"`
	CreatedAt         int64     `json:"created_at"`
	Status            string    `json:"status"`
	Model             string    `json:"model"`
	Output            []rsItem  `json:"output"`
	Usage             *rsUsage  `json:"usage"`
	IncompleteDetails *struct { // set when Status is "incomplete"
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

type rsUsage struct {
	InputTokens        int64 `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int64 `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int64 `json:"total_tokens"`
}

func (u *rsUsage) neutral() neutral.Usage {
	if u == nil {
		return neutral.Usage{}
	}
	c := u.InputTokensDetails.CachedTokens
	return neutral.Usage{Input: u.InputTokens - c, CacheRead: c, Output: u.OutputTokens, Reasoning: u.OutputTokensDetails.ReasoningTokens}
}

func rsUsageOf(u neutral.Usage) *rsUsage {
	in := u.Input + u.CacheRead + u.CacheWrite
	w := &rsUsage{InputTokens: in, OutputTokens: u.Output, TotalTokens: in + u.Output}
	w.InputTokensDetails.CachedTokens = u.CacheRead
	w.OutputTokensDetails.ReasoningTokens = u.Reasoning
	return w
}

// rsStop derives the stop reason from status, incomplete reason and whether
// the output holds a function call.
func rsStop(status, reason string, toolCall bool) neutral.StopReason {
	switch {
	case status == "incomplete" && reason == "content_filter":
		return neutral.StopFilter
	case status == "incomplete":
		return neutral.StopMaxTokens
	case toolCall:
		return neutral.StopToolUse
	}
	return neutral.StopEnd
}

// decodeResponsesResponse reads a non-streamed Responses answer.
func decodeResponsesResponse(body []byte) (*neutral.Response, error) {
	var w rsResponse
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, neutral.WireErr("body", err)
	}
	r := &neutral.Response{ID: w.ID, Model: w.Model, Usage: w.Usage.neutral()}
	tool := false
	for i, it := range w.Output {
		switch it.Type {
		case "message":
			parts, err := decodeRsContent(fmt.Sprintf("output[%d].content", i), it.Content)
			if err != nil {
				return nil, err
			}
			r.Parts = append(r.Parts, parts...)
		case "function_call":
			tool = true
			args := ""
			if it.Arguments != nil {
				args = *it.Arguments
			}
			r.Parts = append(r.Parts, neutral.Part{Kind: neutral.KindToolCall, CallID: it.CallID, Name: it.Name, Args: neutral.ArgsOrEmpty(args)})
		case "reasoning":
			var text []string
			for _, s := range deref(it.Summary) {
				text = append(text, s.Text)
			}
			r.Parts = append(r.Parts, neutral.Part{Kind: neutral.KindReasoning, Text: strings.Join(text, "\n\n"), Encrypted: it.EncryptedContent, ItemID: it.ID})
		default:
			return nil, neutral.FieldErr(fmt.Sprintf("output[%d].type", i), "output item %q is not translatable", it.Type)
		}
	}
	reason := ""
	if w.IncompleteDetails != nil {
		reason = w.IncompleteDetails.Reason
	}
	r.Stop = rsStop(w.Status, reason, tool)
	return r, nil
}

// encodeResponsesResponse writes r as a Responses answer naming model;
// calls of the custom tools are custom_tool_call items.
func encodeResponsesResponse(r *neutral.Response, model string, custom ...string) ([]byte, error) {
	id := r.ID
	if id == "" || !strings.HasPrefix(id, "resp_") {
		id = neutral.NewID("resp_")
	}
	w := rsResponse{ID: id, Object: "response", CreatedAt: chat.Now().Unix(), Status: "completed", Model: model,
		Output: []rsItem{}, Usage: rsUsageOf(r.Usage)}
	for _, p := range r.Parts {
		if p.Kind == neutral.KindToolCall && wirefmt.Contains(custom, p.Name) {
			w.Output = append(w.Output, rsCustomCall(p, "completed"))
			continue
		}
		w.Output = append(w.Output, rsOutputItem(p, "completed"))
	}
	w.Status, w.IncompleteDetails = rsStatusOf(r.Stop)
	return wirefmt.MustJSON(w), nil
}

// rsStatusOf maps a stop reason onto Responses' status and incomplete reason.
func rsStatusOf(s neutral.StopReason) (string, *struct {
	Reason string `json:"reason"`
}) {
	switch s {
	case neutral.StopMaxTokens:
		return "incomplete", &struct {
			Reason string `json:"reason"`
		}{"max_output_tokens"}
	case neutral.StopFilter:
		return "incomplete", &struct {
			Reason string `json:"reason"`
		}{"content_filter"}
	}
	return "completed", nil
}

// rsOutputItem renders one complete answer part as an output item.
func rsOutputItem(p neutral.Part, status string) rsItem {
	switch p.Kind {
	case neutral.KindToolCall:
		id := p.CallID
		if id == "" {
			id = neutral.NewID("call_")
		}
		args := neutral.ArgsOrEmpty(p.Args)
		return rsItem{Type: "function_call", ID: "fc_" + strings.TrimPrefix(id, "call_"), Status: status, CallID: id, Name: p.Name, Arguments: &args}
	case neutral.KindReasoning:
		id := p.ItemID
		if id == "" {
			id = neutral.NewID("rs_")
		}
		it := rsItem{Type: "reasoning", ID: id, Summary: &[]rsContent{}, EncryptedContent: p.Encrypted}
		if p.Text != "" {
			it.Summary = &[]rsContent{{Type: "summary_text", Text: p.Text}}
		}
		return it
	}
	content := []rsOutPart{{Type: "output_text", Text: p.Text, Annotations: &[]any{}}}
	return rsItem{Type: "message", ID: neutral.NewID("msg_"), Status: status, Role: "assistant", Content: wirefmt.MustJSON(content)}
}

// rsCustomCall renders a call of a freeform tool: the "input" argument of
// the function form it was offered in (customToolSchema) as the item's
// input; arguments without it are passed as their JSON text.
func rsCustomCall(p neutral.Part, status string) rsItem {
	it := rsOutputItem(p, status)
	it.Type, it.Arguments = "custom_tool_call", nil
	it.ID = "ctc_" + strings.TrimPrefix(it.ID, "fc_")
	it.Input = customInput(p.Args)
	return it
}

func customInput(args string) string {
	var a struct {
		Input *string `json:"input"`
	}
	if json.Unmarshal([]byte(neutral.ArgsOrEmpty(args)), &a) == nil && a.Input != nil {
		return *a.Input
	}
	return args
}
