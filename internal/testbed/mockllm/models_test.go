package mockllm

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/config"
	"github.com/dual-proxy/dual-proxy/pool/editor"
)

// TestModelList: a channel of every API answers its model list as its
// provider does, so the pool's /v1/models of a pool without models: and
// agents that ask it at start find the models it declares, with their
// output limits (SPEC POOL-1, POOL-25).
func TestModelList(t *testing.T) {
	for _, tc := range []struct{ mock, channelAPI, base string }{
		{Anthropic, config.APIAnthropic, ""},
		{Chat, config.APIOpenAIChat, "/v1"},
		{Responses, config.APIOpenAI, "/v1"},
		{Gemini, config.APIGemini, ""},
		{All, config.APIAnthropic, ""},
	} {
		t.Run("POOL-1/mock-lists-its-models-"+tc.mock, func(t *testing.T) {
			srv := httptest.NewServer(&Channel{API: tc.mock, Models: []string{"m-small"}, Limits: map[string]int{"m-big": 64000, "m-small": 8000}})
			defer srv.Close()
			ch := &config.Channel{ID: "mock", API: tc.channelAPI, BaseURL: srv.URL + tc.base}
			models, err := editor.FetchModels(context.Background(), http.DefaultTransport, ch)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, m := range models {
				ids = append(ids, m.ID)
			}
			if !slices.Equal(ids, []string{"m-small", "m-big"}) || models[0].MaxTokens != 8000 || models[1].MaxTokens != 64000 {
				t.Fatalf("models %+v", models)
			}
		})
	}
	t.Run("POOL-1/mock-without-declared-models-lists-one", func(t *testing.T) {
		srv := httptest.NewServer(&Channel{API: Anthropic})
		defer srv.Close()
		models, err := editor.FetchModels(context.Background(), http.DefaultTransport, &config.Channel{ID: "mock", API: config.APIAnthropic, BaseURL: srv.URL})
		if err != nil || len(models) != 1 || models[0].ID != DefaultModel {
			t.Fatalf("models %+v, %v", models, err)
		}
	})
}
