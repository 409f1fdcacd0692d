package wirefmt

import (
	"encoding/json"
)

// The request structs of the flavours, filled by the one-pass scanner
// (reqscan.go) or, when it gives up, by json.Unmarshal (decodeRequest).

// RoleContent is one entry of a Messages or Chat Completions request's
// messages: the pool reads the role and keeps a view of the content.
type RoleContent struct {
	Role    string  `json:"role"`
	Content RawView `json:"content"`
}

var roleContentNames = []string{"role", "content"}

// ScanMessages decodes a messages array (or null) at b[i].
func ScanMessages(b []byte, i, depth int, dst *[]RoleContent) int {
	if isNullAt(b, i) {
		*dst = nil
		return i + 4
	}
	if i >= len(b) || b[i] != '[' {
		return -1
	}
	list := make([]RoleContent, 0, 4)
	end := scanArrayAt(b, i, depth, func(vs int) int {
		var m RoleContent
		ve := ScanStruct(b, vs, depth+1, roleContentNames, func(k, vs int) int {
			if k == 0 {
				return ScanStringAt(b, vs, &m.Role)
			}
			return ScanRawAt(b, vs, depth+2, &m.Content)
		})
		list = append(list, m)
		return ve
	})
	*dst = list
	return end
}

// DecodeRequest fills req (a request, or an event's usage) from body: by
// Scan when it can, else with json.Unmarshal (whose error is the caller's
// 400 for a request).
func DecodeRequest[T any, P interface {
	*T
	Scan(b []byte) bool
}](body []byte, req P) error {
	if req.Scan(body) {
		return nil
	}
	*req = *new(T) // the scan may have set some fields
	return json.Unmarshal(body, req)
}

var (
	UserIDNames   = []string{"user_id"}
	EffortNames   = []string{"effort"}
	ThinkingNames = []string{"type", "budget_tokens"}
)

// ScanInt64Ptr decodes an integer literal (or null: nil) at b[i] into a
// *int64 field.
func ScanInt64Ptr(b []byte, i int, dst **int64) int {
	if isNullAt(b, i) {
		*dst = nil
		return i + 4
	}
	var n int
	end := ScanInt(b, i, &n)
	if end >= 0 {
		v := int64(n)
		*dst = &v
	}
	return end
}
