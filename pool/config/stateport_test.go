package config

import (
	"strings"
	"testing"
)

// TestStatePortRange: a state URL's port is 1-65535 in the file's state:
// (scalar or url:) and in --pool-state / DUAL_PROXY_POOL_STATE
// (CheckStateURL), refused naming the place and the range (SPEC POOL-23).
func TestStatePortRange(t *testing.T) {
	base := "pools: {p: {members: [a]}}\nchannels: {a: {api: anthropic, base_url: https://a.example, api_key: sk-aaaa}}\n"
	for _, v := range []string{"redis://h:99999/0", "rediss://u:pw@h:65536", "redis://h:0/1"} {
		t.Run("POOL-23/port-out-of-range-refused/"+v, func(t *testing.T) {
			for _, text := range []string{"state: " + v, "state: {url: '" + v + "'}"} {
				_, err := ParseConfig([]byte(base+text+"\n"), nil)
				if err == nil || !strings.HasPrefix(err.Error(), "state") || !strings.Contains(err.Error(), "1-65535") {
					t.Errorf("%s: %v", text, err)
				}
			}
			if err := CheckStateURL(v); err == nil || !strings.Contains(err.Error(), "1-65535") || strings.Contains(err.Error(), "pw") {
				t.Errorf("CheckStateURL: %v", err)
			}
		})
	}
	t.Run("POOL-23/ports-in-range-accepted", func(t *testing.T) {
		for _, v := range []string{"redis://h:1/0", "redis://h:65535", "redis://h/0", "rediss://[::1]:6380/2"} {
			if err := CheckStateURL(v); err != nil {
				t.Errorf("%s: %v", v, err)
			}
		}
	})
}
