package api

import (
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
)

// EncodeError renders e as api's error document and the HTTP status to
// send. Anthropic's 529 is sent as 503 to the other APIs, which have no 529.
func EncodeError(api apikind.Kind, e neutral.Error) (int, []byte) {
	return must(api).EncodeError(e)
}

// ErrorEvent renders e as api's in-stream error (after the stream's head was
// sent): Anthropic "event: error"; Chat `data: {"error":…}`; Gemini a data
// event with the error document; Responses uses its encoder's own error
// event (it needs the stream's sequence numbers), so here it gets the
// "error" event with sequence number 0.
func ErrorEvent(api apikind.Kind, e neutral.Error) []byte {
	return must(api).EncodeErrorEvent(e)
}
