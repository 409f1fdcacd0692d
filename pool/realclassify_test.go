package pool_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// classRow is one upstream error answer as channels send it, and what the
// pool must make of it (SPEC POOL-10, POOL-10b).
type classRow struct {
	name   string
	api    string
	status int
	body   string
	class  string // quota, bad_request, model_not_found, auth, rate_limit
}

// classRows are real wordings of quota/billing exhaustion, caller errors
// and misconfiguration, one per rule of the classification table.
var classRows = []classRow{
	{"anthropic-credit-balance-too-low", "anthropic", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."}}`, "quota"},
	{"anthropic-usage-limits", "anthropic", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"You have reached your specified API usage limits. You will regain access on 2026-12-01 at 00:00 UTC."}}`, "quota"},
	{"openai-insufficient-quota-429", "openai", 429, `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`, "quota"},
	{"openai-insufficient-quota-400", "openai", 400, `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`, "quota"},
	{"openai-billing-hard-limit", "openai", 400, `{"error":{"message":"Billing hard limit has been reached","type":"invalid_request_error","param":null,"code":"billing_hard_limit_reached"}}`, "quota"},
	{"quota-exceeded-400", "openai", 400, `{"error":{"message":"Quota exceeded for this API key.","type":"invalid_request_error","param":null,"code":null}}`, "quota"},
	{"deepseek-insufficient-balance-402", "openai", 402, `{"error":{"message":"Insufficient Balance","type":"unknown_error","param":null,"code":"invalid_request_error"}}`, "quota"},
	{"one-api-user-quota-403", "openai", 403, `{"error":{"message":"user quota is not enough","type":"new_api_error","param":"","code":"insufficient_user_quota"}}`, "quota"},
	{"zhipu-balance-1113", "openai", 429, `{"error":{"code":"1113","message":"余额不足或无可用资源包,请充值。"}}`, "quota"},
	{"openrouter-credits-402", "openai", 402, `{"error":{"message":"Insufficient credits. Add more using https://openrouter.ai/settings/credits","code":402}}`, "quota"},
	{"plan-limit-403", "anthropic", 403, `{"type":"error","error":{"type":"permission_error","message":"Your plan limit has been reached for this month."}}`, "quota"},

	{"openai-unsupported-parameter", "openai", 400, `{"error":{"message":"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.","type":"invalid_request_error","param":"max_tokens","code":"unsupported_parameter"}}`, "bad_request"},
	{"openai-unknown-parameter", "openai", 400, `{"error":{"message":"Unknown parameter: 'temperature_x'.","type":"invalid_request_error","param":"temperature_x","code":"unknown_parameter"}}`, "bad_request"},
	{"openai-invalid-value", "openai", 400, `{"error":{"message":"Invalid value: 'max'. Supported values are: 'low', 'medium', and 'high'.","type":"invalid_request_error","param":"reasoning_effort","code":"unsupported_value"}}`, "bad_request"},
	{"anthropic-field-required", "anthropic", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}}`, "bad_request"},
	{"anthropic-prompt-too-long", "anthropic", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`, "bad_request"},
	{"parameter-naming-billing", "openai", 400, `{"error":{"message":"Unrecognized request argument supplied: billing_address","type":"invalid_request_error","param":"billing_address","code":"unknown_parameter"}}`, "bad_request"},

	{"openai-model-not-found", "openai", 404, `{"error":{"message":"The model 'gpt-x' does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`, "model_not_found"},
	{"anthropic-model-not-found", "anthropic", 404, `{"type":"error","error":{"type":"not_found_error","message":"model: claude-x"}}`, "model_not_found"},
	{"auth-403-no-quota-words", "anthropic", 403, `{"type":"error","error":{"type":"permission_error","message":"Your API key does not have permission to use the specified resource."}}`, "auth"},
	{"rate-limit-429", "openai", 429, `{"error":{"message":"Rate limit reached for requests","type":"requests","param":null,"code":"rate_limit_exceeded"}}`, "rate_limit"},
}

// TestClassificationTable: every row of the table against a bound member
// with a healthy second one (SPEC POOL-10b).
func TestClassificationTable(t *testing.T) {
	for _, row := range classRows {
		t.Run("POOL-10b/"+row.name, func(t *testing.T) {
			fail := func(w http.ResponseWriter, r *http.Request, _ int, _ []byte) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(row.status)
				io.WriteString(w, row.body)
			}
			ok, path, body := okChannel("b"), "/pool/p/v1/messages", anthropicBody(false)
			if row.api == "openai" {
				ok, path, body = okChat("b"), "/pool/p/v1/chat/completions", chatBody(false)
			}
			w := newRWorld(t, rconf{api: row.api, poolExtra: "    strategy: failover\n"}, []string{"a", "b"}, fail, ok)
			resp, got := w.do(path, "s1", body)
			switch row.class {
			case "bad_request":
				// The caller's error: the member's own status and body, one
				// upstream call, no cooldown.
				if resp.StatusCode != row.status || got != row.body {
					t.Fatalf("got %d %s, want the member's %d %s", resp.StatusCode, got, row.status, row.body)
				}
				if w.ch["b"].calls() != 0 || w.member("a").State != "ready" {
					t.Fatalf("b calls %d, a %+v", w.ch["b"].calls(), w.member("a"))
				}
				return
			case "model_not_found":
				if resp.StatusCode != 200 || !strings.Contains(got, "hi from b") {
					t.Fatalf("got %d %s", resp.StatusCode, got)
				}
				return
			}
			if resp.StatusCode != 200 || !strings.Contains(got, "hi from b") {
				t.Fatalf("no failover: %d %s", resp.StatusCode, got)
			}
			if m := w.member("a"); m.State != "cooling" || m.CooldownClass != row.class {
				t.Fatalf("a: %+v, want cooling with class %s", m, row.class)
			}
			if row.class == "quota" {
				// The session moved: the next call goes straight to b.
				w.do(path, "s1", body)
				if a, b := w.ch["a"].calls(), w.ch["b"].calls(); a != 1 || b != 2 {
					t.Fatalf("after the move a=%d b=%d calls", a, b)
				}
			}
		})
	}
}

// TestClassificationInStream: the same table reads a pre-commit error event
// (SPEC POOL-10b): a credit-balance error event is quota and fails over; an
// unsupported-parameter one is the caller's and passes through.
func TestClassificationInStream(t *testing.T) {
	errEvent := func(body string) func(w http.ResponseWriter, r *http.Request, n int, _ []byte) {
		return func(w http.ResponseWriter, r *http.Request, _ int, _ []byte) {
			streamHead(w)
			ev(w, "error", body)
		}
	}
	t.Run("POOL-10b/stream-credit-balance-fails-over", func(t *testing.T) {
		w := newRWorld(t, rconf{poolExtra: "    strategy: failover\n"}, []string{"a", "b"},
			errEvent(`{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API."}}`), okChannel("b"))
		resp, got := w.do("/pool/p/v1/messages", "s1", anthropicBody(true))
		if resp.StatusCode != 200 || !strings.Contains(got, "hi from b") || w.member("a").CooldownClass != "quota" {
			t.Fatalf("%d %s %+v", resp.StatusCode, got, w.member("a"))
		}
	})
	t.Run("POOL-10b/stream-unsupported-parameter-passes-through", func(t *testing.T) {
		w := newRWorld(t, rconf{poolExtra: "    strategy: failover\n"}, []string{"a", "b"},
			errEvent(`{"type":"error","error":{"type":"invalid_request_error","message":"Unsupported parameter: top_k"}}`), okChannel("b"))
		_, got := w.do("/pool/p/v1/messages", "s1", anthropicBody(true))
		if !strings.Contains(got, "Unsupported parameter: top_k") || w.ch["b"].calls() != 0 {
			t.Fatalf("%s b=%d", got, w.ch["b"].calls())
		}
	})
}
