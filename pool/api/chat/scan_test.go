package chat

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/pool/api/internal/wiretest"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

// structScans are the one-scan decoders of the Chat Completions request and its
// parts.
func structScans() []wiretest.StructScan {
	return []wiretest.StructScan{
		wiretest.NewStructScan(chatRequestFields, func(b []byte, w *chatRequest) bool { return scanChatRequest(b, w, nil) }),
		wiretest.NewStructScan(chatContentPartFields, scanChatContentPart),
		wiretest.NewStructScan(chatMessageFields, scanChatMessage),
		wiretest.NewStructScan(chatToolCallFields, scanChatToolCall),
		wiretest.NewStructScan(chatCallFunctionFields, scanChatCallFunction),
		wiretest.NewStructScan(chatToolFields, scanChatTool),
		wiretest.NewStructScan(chatToolFunctionFields, scanChatToolFunction),
	}
}

// FuzzDecodeValid: a valid JSON body decoded by decodeValid fills the
// request struct exactly as json.Unmarshal does and finds topKeys' keys, or
// gives way to json.Unmarshal, and each part's decoder does the same for
// every object and array inside the body (SPEC POOL-21: the translated
// request is the client's; it is decoded once).
func FuzzDecodeValid(f *testing.F) {
	for _, s := range wiretest.DecodeValidSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if !json.Valid(in) {
			return
		}
		wiretest.CheckDecodeValid(t, in, scanChatRequest)
		for _, v := range wiretest.Containers(in) {
			for _, c := range structScans() {
				c.Check(t, v)
			}
		}
	})
}

// TestScanFieldsAreTheJSONNames: each decoder's list of JSON names is its
// struct's (json tags), none two equal ignoring case, so that a key
// naming a field only ignoring case is seen and left to json.Unmarshal
// (SPEC POOL-21).
func TestScanFieldsAreTheJSONNames(t *testing.T) {
	t.Run("POOL-21/scan-fields-are-the-json-names", func(t *testing.T) { wiretest.CheckFieldNames(t, structScans()) })
}

// TestDecodeValid runs the seeds and checks that the usual bodies take the
// one scan (SPEC POOL-21).
func TestDecodeValid(t *testing.T) {
	for _, s := range wiretest.DecodeValidSeeds() {
		t.Run("POOL-21/same-as-unmarshal", func(t *testing.T) { wiretest.CheckDecodeValid(t, s, scanChatRequest) })
	}
	system := strings.Repeat("You are a coding agent; answer briefly. ", 400)
	for _, body := range []string{wiretest.ChatConversation(),
		`{"model":"m","stream":true,"stream_options":{"include_usage":true},"max_tokens":1024,"messages":[{"role":"system","content":"` + system + `"},{"role":"user","content":"say something"}]}`} {
		t.Run("POOL-21/one-scan", func(t *testing.T) {
			if _, ok := wirefmt.DecodeValid([]byte(body), &chatRequest{}, scanChatRequest); !ok {
				t.Fatal("the usual body takes json.Unmarshal")
			}
		})
	}
}

// BenchmarkDecodeRequest is a client's body of about 100 KiB (a coding
// agent's conversation) decoded into the request struct: "one-scan" by
// decodeValid (the pool's call for a body ParseRequest validated),
// "unmarshal" by json.Unmarshal of the same body (pool/api's
// BenchmarkDecodeRequest has the whole of DecodeValidRequest).
func BenchmarkDecodeRequest(b *testing.B) {
	body := []byte(wiretest.ChatConversation())
	run := func(name string, fn func() bool) {
		b.Run("chat/"+name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			testkit.ReportCPU(b)
			for b.Loop() {
				if !fn() {
					b.Fatal("not decoded")
				}
			}
		})
	}
	run("one-scan", func() bool { _, ok := wirefmt.DecodeValid(body, &chatRequest{}, scanChatRequest); return ok })
	run("unmarshal", func() bool { return json.Unmarshal(body, &chatRequest{}) == nil })
}
