package mockllm

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"net/http/httptest"
	"testing"
)

// A recording of an agent's request keeps its body as sent: key order,
// spacing and number spelling, after a gzip Content-Encoding is undone.
func TestCallKeepsTheRawBody(t *testing.T) {
	ch := &Channel{API: Anthropic}
	srv := httptest.NewServer(ch)
	defer srv.Close()
	body := []byte(`{"model":"m",  "max_tokens":1.0e3,"messages":[{"role":"user","content":"hi"}]}`)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(body)
	_ = zw.Close()
	for _, c := range []struct {
		name, encoding string
		sent           []byte
	}{{"plain", "", body}, {"gzip", "gzip", gz.Bytes()}} {
		t.Run("POOL-21/raw-body-as-sent-"+c.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/messages", bytes.NewReader(c.sent))
			req.Header.Set("Content-Type", "application/json")
			if c.encoding != "" {
				req.Header.Set("Content-Encoding", c.encoding)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			calls := ch.Calls()
			if got := calls[len(calls)-1].Raw; !bytes.Equal(got, body) {
				t.Fatalf("Raw = %q, want %q", got, body)
			}
		})
	}
}
