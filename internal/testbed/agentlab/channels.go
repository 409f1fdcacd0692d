package agentlab

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// ChannelSpec describes two mock model channels in a lab and the pool over
// them that the pool agent tests use: member 1 fails with FailStatus (every
// call when FailFirst is mockllm.FailEvery, else its first FailFirst calls)
// and replies "from-member-1" otherwise, so an agent printing "ok" proves
// member 2 answered; member 2 is healthy.
type ChannelSpec struct {
	API            string // the channels' api: "anthropic" or "openai"
	Speaks         string // the API the mocks speak (mockllm: anthropic, responses…)
	BasePath       string // appended to each channel's base URL ("" or "/v1")
	Pool           string // pool id
	Members        [2]string
	KeyEnvs        [2]string // api_key_env of each member
	Ports          [2]string
	FailStatus     int
	FailFirst      int
	CooldownMillis string // YAML flow map of the pool's cooldown, e.g. "server_ms: 1"
}

// PoolChannels are the running pair: the config file and each member's
// request log (JSON lines of the mockllm command).
type PoolChannels struct {
	Config, Log1, Log2 string
}

// StartPoolChannels starts the two channels of s inside l with the mock
// model endpoint mock (Tools.MockLLM) and writes the pool config.
func (l *Lab) StartPoolChannels(t testing.TB, mock string, s ChannelSpec) PoolChannels {
	t.Helper()
	ch := PoolChannels{Config: filepath.Join(t.TempDir(), "config.yaml")}
	ch.Log1 = l.StartMockLLM(t, mock, s.Ports[0], "-api", s.Speaks, "-reply", "from-member-1",
		"-fail-status", strconv.Itoa(s.FailStatus), "-fail-first", strconv.Itoa(s.FailFirst))
	ch.Log2 = l.StartMockLLM(t, mock, s.Ports[1], "-api", s.Speaks)
	yaml := "channels:\n"
	for i := range 2 {
		yaml += "  " + s.Members[i] + ": {api: " + s.API + ", base_url: \"http://127.0.0.1:" + s.Ports[i] + s.BasePath + "\", api_key_env: " + s.KeyEnvs[i] + "}\n"
	}
	yaml += "pools:\n  " + s.Pool + ":\n    members: [" + s.Members[0] + ", " + s.Members[1] + "]\n    cooldown: {" + s.CooldownMillis + "}\n"
	if err := os.WriteFile(ch.Config, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return ch
}

// ReadJSONL reads a JSON-lines file (mock and launcher logs); a missing
// file is empty.
func ReadJSONL(t testing.TB, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20) // agents' request bodies are tens of KB
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: %v in %q", path, err, sc.Text())
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return out
}
