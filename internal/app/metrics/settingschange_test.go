package metrics

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
)

func TestSettingsChanges(t *testing.T) {
	t.Run("OPS-7/settings-changes-counted-by-who", func(t *testing.T) {
		m := New()
		m.SettingsChanged("cli", []string{"gateway"})
		m.SettingsChanged("cli", []string{"cooldown-ms"})
		m.SettingsChanged("file", []string{"gateway"})
		gathered, err := m.registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		fams := map[string]*dto.MetricFamily{}
		for _, f := range gathered {
			fams[f.GetName()] = f
		}
		if v := value(fams, "dual_proxy_settings_changes_total", "by", "cli"); v != 2 {
			t.Fatalf("cli changes %v", v)
		}
		if v := value(fams, "dual_proxy_settings_changes_total", "by", "file"); v != 1 {
			t.Fatalf("file changes %v", v)
		}
	})
}
