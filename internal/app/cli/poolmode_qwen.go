package cli

import (
	"encoding/json"
	"os"
	"strings"

	"github.com/dual-proxy/dual-proxy/internal/app/cli/agentconf"
)

// qwenAuthType is the auth type Qwen Code needs on the pool: its OpenAI
// client reads OPENAI_BASE_URL and OPENAI_API_KEY, which the pool's
// environment sets, but from a fresh HOME no auth type is selected and
// `qwen -p` exits ("No auth type is selected").
const qwenAuthType = "openai"

// qwenPreset puts `--auth-type openai` after argv[0] unless the user chose
// an auth type: --auth-type on the command line, or
// security.auth.selectedType (the older top-level selectedAuthType) in one
// of Qwen Code's settings files for env and the working directory.
func qwenPreset(env, argv []string) []string {
	for _, a := range argv[1:] {
		if a == "--" {
			break
		}
		if a == "--auth-type" || strings.HasPrefix(a, "--auth-type=") {
			return argv
		}
	}
	cwd, _ := os.Getwd()
	for _, f := range agentconf.QwenSettingsFiles(env, cwd) {
		if b, err := os.ReadFile(f); err == nil && qwenAuthSelected(b) {
			return argv
		}
	}
	return append([]string{argv[0], "--auth-type", qwenAuthType}, argv[1:]...)
}

// qwenAuthSelected reports whether a Qwen Code settings file selects an
// auth type (security.auth.selectedType, or the older top-level
// selectedAuthType). A file that is not JSON selects none.
func qwenAuthSelected(data []byte) bool {
	var doc struct {
		Security struct {
			Auth struct {
				SelectedType string `json:"selectedType"`
			} `json:"auth"`
		} `json:"security"`
		SelectedAuthType string `json:"selectedAuthType"`
	}
	if json.Unmarshal(data, &doc) != nil {
		return false
	}
	return doc.Security.Auth.SelectedType != "" || doc.SelectedAuthType != ""
}
